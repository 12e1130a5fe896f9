// A live stream's health (Livepeer's `isHealthy` and `issues`), judged from real signals of its
// publisher and pipeline. Pure: the runtime gathers the signals, this says what they mean.

export interface HealthSignals {
  /** The publisher left and the session waits for it (seconds left in the window). */
  reconnectingSecondsLeft?: number;
  /** Output over input media time over the recent past; undefined before it is known. */
  speed?: number;
  /** The publisher's newest keyframe interval, ms. */
  keyframeIntervalMs?: number;
  segmentSeconds: number;
  /** The publisher sends audio. */
  hasAudio: boolean;
  /** Bytes per second over the last 10 s, and over the session's publish so far. */
  ingestRate?: number;
  ingestAverage?: number;
  /** Renditions of an encoder's own ladder whose keyframes are not at the top rendition's instants (their names). */
  unalignedRenditions?: readonly string[];
  /** Renditions of an encoder's own ladder that have sent no media while the top one plays (their names). */
  silentRenditions?: readonly string[];
  /** The DVR window is shorter than asked for want of disk: what to tell the broadcaster. */
  dvrCut?: string;
}

/** Each issue's kind, for metrics (a label with few values). */
export type IssueKind = "reconnecting" | "slow_transcode" | "long_keyframe_interval" | "bitrate_collapse" | "no_audio" | "unaligned_keyframes" | "silent_renditions" | "dvr_window_cut";
export const ISSUE_KINDS: IssueKind[] = ["reconnecting", "slow_transcode", "long_keyframe_interval", "bitrate_collapse", "no_audio", "unaligned_keyframes", "silent_renditions", "dvr_window_cut"];

export interface Health {
  isHealthy: boolean;
  issues: string[];
  kinds: IssueKind[];
}

/** Below this share of real time the viewers' buffer drains. */
export const SLOW_SPEED = 0.95;
/**
 * The longest source keyframe interval that is fine (s): the transcode forces its own
 * keyframes, but a viewer's first picture after a (re)connect and a passthrough's segments wait
 * for the source's. 2 s is what OBS and the hosted services ask for; longer segments allow more.
 */
export const SOURCE_KEYFRAME_LIMIT_S = 2;

/** The recent ingest rate fell under this share of the publish's average. */
export const BITRATE_COLLAPSE = 0.2;

export function assessHealth(s: HealthSignals): Health {
  const issues: string[] = [];
  const kinds: IssueKind[] = [];
  const add = (kind: IssueKind, text: string) => {
    kinds.push(kind);
    issues.push(text);
  };
  if (s.reconnectingSecondsLeft !== undefined) {
    add("reconnecting", `reconnecting: the publisher left; the session waits ${Math.ceil(s.reconnectingSecondsLeft)} s more for it`);
  } else {
    if (s.speed !== undefined && s.speed < SLOW_SPEED) {
      add("slow_transcode", `transcode slower than real time: ${s.speed.toFixed(2)}x (the server is short of CPU for this ladder)`);
    }
    const limit = Math.max(SOURCE_KEYFRAME_LIMIT_S, s.segmentSeconds);
    if (s.keyframeIntervalMs !== undefined && s.keyframeIntervalMs > limit * 1000 + 100) {
      add("long_keyframe_interval", `keyframe interval ${(s.keyframeIntervalMs / 1000).toFixed(1)} s is longer than ${limit} s: set the encoder's keyframe interval to ${limit} s or less`);
    }
    if (s.ingestRate !== undefined && s.ingestAverage !== undefined && s.ingestAverage > 0 && s.ingestRate < s.ingestAverage * BITRATE_COLLAPSE) {
      add("bitrate_collapse", `ingest bitrate collapsed: ${Math.round((s.ingestRate * 8) / 1000)} kbit/s, ${Math.round((100 * s.ingestRate) / s.ingestAverage)} % of the publish's average`);
    }
    if (!s.hasAudio) add("no_audio", "no audio: the publisher sends video only");
    if (s.unalignedRenditions && s.unalignedRenditions.length > 0) {
      add(
        "unaligned_keyframes",
        `the encoder's renditions have keyframes at different instants (${s.unalignedRenditions.join(", ")} against the top one): players switching renditions may stall or skip; give every track the same keyframe interval, aligned`,
      );
    }
    if (s.silentRenditions && s.silentRenditions.length > 0) {
      add(
        "silent_renditions",
        `the encoder announced renditions that send no frames (${s.silentRenditions.join(", ")}): viewers get the others; check the encoder's multitrack settings`,
      );
    }
    if (s.dvrCut) add("dvr_window_cut", s.dvrCut);
  }
  return { isHealthy: issues.length === 0, issues, kinds };
}
