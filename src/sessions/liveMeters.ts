import type { PublisherStats } from "../ingest";
import { RateWindow } from "../metrics";
import type { LiveRates } from "../shapes";
import { assessHealth, type Health } from "./health";
import { SpeedMeter } from "./speedMeter";

// What a live session measures of itself: bytes in and out, the transcode's speed against its
// source, and the health those and the publisher's own signals add up to.

/** Live rates span this much of the recent past. */
const RATE_WINDOW_MS = 10_000;
/** A session whose transcode stays below this share of real time for SLOW_WINDOW_MS ends. */
export const SLOW_LIMIT = 0.9;
export const SLOW_WINDOW_MS = 30_000;
/** Health signals (speed) span this much of the recent past. */
const HEALTH_WINDOW_MS = 10_000;

export class LiveMeters {
  private readonly ingestRate = new RateWindow(RATE_WINDOW_MS);
  private readonly outgoingRate = new RateWindow(RATE_WINDOW_MS);
  private readonly speed = new SpeedMeter(SLOW_WINDOW_MS);
  private readonly recentSpeed = new SpeedMeter(HEALTH_WINDOW_MS);
  private bytesOut = 0;
  /** When the current publisher began (its average ingest rate, for the health). */
  private publishStartedAt = Date.now();

  constructor(private readonly segmentSeconds: number) {
    this.outgoingRate.add(Date.now(), 0);
  }

  /** A publisher (first, or back): its bytes are counted from here. */
  newPublisher(stats: PublisherStats | undefined): void {
    this.publishStartedAt = Date.now();
    this.ingestRate.reset();
    this.ingestRate.add(Date.now(), stats?.bytesRead ?? 0);
  }

  /** A pipeline run starts its output clock at 0: its speed is measured afresh. */
  newRun(): void {
    this.speed.reset();
    this.recentSpeed.reset();
  }

  segmentsWritten(bytes: number): void {
    this.bytesOut += bytes;
    this.outgoingRate.add(Date.now(), this.bytesOut);
  }

  /** ffmpeg's output clock against the publisher's media clock. */
  outputTime(seconds: number, stats: PublisherStats): void {
    const now = Date.now();
    this.speed.add(now, stats.mediaMs / 1000, seconds);
    this.recentSpeed.add(now, stats.mediaMs / 1000, seconds);
  }

  /** The transcode's speed over SLOW_WINDOW_MS once the window is full; undefined before. */
  sustainedSpeed(): number | undefined {
    return this.speed.span() >= SLOW_WINDOW_MS - 2000 ? this.speed.ratio() : undefined;
  }

  /** Bytes per second in from the publisher (while it is live) and out of the pipeline, over the last 10 s. */
  rates(stats: PublisherStats | undefined, live: boolean): LiveRates {
    const now = Date.now();
    if (stats) this.ingestRate.add(now, stats.bytesRead);
    this.outgoingRate.add(now, this.bytesOut);
    const ingest = live ? this.ingestRate.perSecond() : 0;
    return { ingestRate: Math.round(ingest ?? 0), outgoingRate: Math.round(this.outgoingRate.perSecond() ?? 0) };
  }

  /** Livepeer's isHealthy and issues: reconnecting while the window is open, else the live signals. */
  health(stats: PublisherStats | undefined, live: boolean, reconnectingSecondsLeft: number | undefined, ladder: { unaligned: string[]; silent: string[] } = { unaligned: [], silent: [] }, dvrCut?: string): Health {
    if (reconnectingSecondsLeft !== undefined) return assessHealth({ reconnectingSecondsLeft, segmentSeconds: this.segmentSeconds, hasAudio: true });
    const { ingestRate } = this.rates(stats, live);
    const elapsed = (Date.now() - this.publishStartedAt) / 1000;
    return assessHealth({
      speed: this.recentSpeed.span() >= HEALTH_WINDOW_MS / 2 ? this.recentSpeed.ratio() : undefined,
      keyframeIntervalMs: stats?.keyframeIntervalMs,
      segmentSeconds: this.segmentSeconds,
      hasAudio: stats?.hasAudio ?? true,
      unalignedRenditions: ladder.unaligned,
      silentRenditions: ladder.silent,
      dvrCut,
      // Only once the 10 s rate is not simply the publish's start.
      ...(stats && elapsed > 2 * (RATE_WINDOW_MS / 1000) ? { ingestRate, ingestAverage: stats.bytesRead / elapsed } : {}),
    });
  }
}
