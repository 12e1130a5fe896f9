// Everything a soak measured: plain data, which main.ts fills and the report reads.

import type { Exit } from "../lib";
import type { ApiLoad } from "./apiLoad";
import type { ReaderLog, ReaderStats } from "./readers";
import type { Sample } from "./resources";
import type { Onair } from "./server";
import type { Settings } from "./settings";
import { within } from "./stats";
import type { SoakStream } from "./streams";
import type { EventsVerdict } from "./webhooks";

/** The readers' totals at one moment: for the timeline. */
export interface Counters {
  at: number;
  segments: number;
  dropped: number;
}

export interface SoakResult {
  settings: Settings;
  o: Onair;
  warmupSeconds: number;
  liveAfterS: number;
  runStart: number;
  warmEnd: number;
  runEnd: number;
  stallMs: number;
  streams: SoakStream[];
  /** By stream index. */
  readerStats: ReaderStats[][];
  readerLog: ReaderLog;
  baseline: { load: ApiLoad; from: number; start: Sample; end: Sample; metricsFrom: string; metricsTo: string };
  load: ApiLoad;
  samples: Sample[];
  counters: Counters[];
  /** /metrics when every stream went live, at the end of the warm-up, at the end of the run. */
  metrics: { live: string; warm: string; end: string };
  /** After the publishers left. */
  after: {
    seconds: number;
    settled?: Sample;
    metrics: string;
    stillActive?: number;
    sessionsInApi?: number;
    idleProblem?: string;
    /** SIGTERM to the server at the end: how it exited and how long it took. */
    shutdown?: { exit: Exit; seconds: number };
  };
  events: EventsVerdict;
  benchLag: { p99: number; max: number };
  /** The run ended early because the server died. */
  broken?: string;
}

/** The API requests under load that are judged: after the warm-up. */
export const apiAfterWarmUp = (r: SoakResult) => within(r.load.samples, r.warmEnd, r.runEnd);
/** The API requests of the baseline that are judged: after its own warm-up. */
export const baselineApi = (r: SoakResult) => r.baseline.load.samples.filter((x) => x.at >= r.baseline.from);
