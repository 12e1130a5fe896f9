// What must hold in a cluster whatever fault it meets, as pure checks over what a test sampled.
// Each returns the violations it saw, in words that say what was sampled and when (times are
// milliseconds since the step began, shown as +s.s); an empty list means the invariant held.

/** I1..I5 as named in the fault schedule; "step": what one step itself expects (e.g. a terminate ends its session). */
export type Invariant = "I1" | "I2" | "I3" | "I4" | "I5" | "step";

export interface Violation {
  invariant: Invariant;
  detail: string;
}

const secs = (ms: number) => `+${(ms / 1000).toFixed(1)} s`;

/** Consecutive items for which `bad` holds with the same `key`, as runs (a 3 s overlap is one finding, not 15). */
function runs<T>(items: T[], bad: (t: T) => boolean, key: (t: T) => string): { first: T; last: T; count: number }[] {
  const out: { first: T; last: T; count: number }[] = [];
  let open: { first: T; last: T; count: number } | undefined;
  for (const item of items) {
    if (!bad(item)) {
      open = undefined;
      continue;
    }
    if (open && key(open.first) === key(item)) {
      open.last = item;
      open.count++;
    } else {
      open = { first: item, last: item, count: 1 };
      out.push(open);
    }
  }
  return out;
}

function byStream<T extends { streamId: string }>(items: T[]): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const i of items) m.set(i.streamId, [...(m.get(i.streamId) ?? []), i]);
  return m;
}

/** One sample of which ingest nodes run a (not stopped) live ffmpeg for a stream. */
export interface ServingSample {
  at: number;
  streamId: string;
  nodes: string[];
}

/** I1: at most one node serves a stream's media at any sampled moment. */
export function atMostOneServer(samples: ServingSample[]): Violation[] {
  const out: Violation[] = [];
  for (const [streamId, list] of byStream(samples)) {
    for (const r of runs(list, (s) => new Set(s.nodes).size > 1, (s) => [...new Set(s.nodes)].sort().join(","))) {
      out.push({
        invariant: "I1",
        detail: `stream ${streamId}: live ffmpeg on ${[...new Set(r.first.nodes)].sort().join(" and ")} at once, ${secs(r.first.at)}..${secs(r.last.at)} (${r.count} samples)`,
      });
    }
  }
  return out;
}

/** One sample of a stream's sessions with ended_at IS NULL. */
export interface OpenSessionsSample {
  at: number;
  streamId: string;
  open: { id: string; node: string }[];
}

/** I2: at most one open session per stream at any sampled moment. */
export function atMostOneOpenSession(samples: OpenSessionsSample[]): Violation[] {
  const out: Violation[] = [];
  for (const [streamId, list] of byStream(samples)) {
    const describe = (s: OpenSessionsSample) => s.open.map((o) => `${o.id}@${o.node}`).sort().join(", ");
    for (const r of runs(list, (s) => s.open.length > 1, describe)) {
      out.push({ invariant: "I2", detail: `stream ${streamId}: ${r.first.open.length} open sessions (${describe(r.first)}), ${secs(r.first.at)}..${secs(r.last.at)} (${r.count} samples)` });
    }
  }
  return out;
}

/** A stream.started or stream.idle as a receiver got it (retries carry the same id). */
export interface LifecycleEvent {
  id: string;
  name: string;
  streamId: string;
  sessionId: string;
  at: number;
}

/**
 * I3: per stream, stream.started and stream.idle alternate, starting with started: no event
 * repeats the one before it (a second idle for an ended session, a started with no idle
 * between). A session may go idle and live again (a reconnect inside its window).
 */
export function startedIdleAlternate(events: LifecycleEvent[]): Violation[] {
  const seen = new Set<string>();
  const unique = events.filter((e) => (e.name === "stream.started" || e.name === "stream.idle") && !seen.has(e.id) && seen.add(e.id));
  const out: Violation[] = [];
  for (const [streamId, list] of byStream(unique)) {
    const order = list.map((e) => `${e.name.slice("stream.".length)}(${e.sessionId.slice(0, 8)})@${secs(e.at)}`).join(" ");
    let expected = "stream.started";
    for (const e of list) {
      if (e.name !== expected) out.push({ invariant: "I3", detail: `stream ${streamId}: ${e.name} of session ${e.sessionId} at ${secs(e.at)} where ${expected} was due; received: ${order}` });
      expected = e.name === "stream.started" ? "stream.idle" : "stream.started";
    }
  }
  return out;
}

/** A session's recording_status at one moment. */
export interface RecordingSample {
  at: number;
  sessionId: string;
  status: string | null;
}

/** I4 (history): a recording that was ready or failed never goes back to waiting. */
export function recordingNeverReopens(samples: RecordingSample[]): Violation[] {
  const settled = new Map<string, RecordingSample>();
  const out: Violation[] = [];
  for (const s of samples) {
    const before = settled.get(s.sessionId);
    if (before && s.status === "waiting") {
      out.push({ invariant: "I4", detail: `session ${s.sessionId}: recording ${before.status} at ${secs(before.at)}, waiting again at ${secs(s.at)}` });
      settled.delete(s.sessionId);
    }
    if (s.status === "ready" || s.status === "failed") settled.set(s.sessionId, s);
  }
  return out;
}

/** A ready recording's MP4 as probed, beside what its session recorded. */
export interface RecordingCheck {
  sessionId: string;
  status: string | null;
  recordedSeconds: number;
  /** ffprobe's duration of the MP4; undefined when it could not be read. */
  mp4Seconds: number | undefined;
}

/** I4 (files): a ready recording's MP4 lasts what its session recorded, within `toleranceSeconds`. */
export function readyRecordingsCover(checks: RecordingCheck[], toleranceSeconds = 1.5): Violation[] {
  const out: Violation[] = [];
  for (const c of checks) {
    if (c.status !== "ready") continue;
    if (c.mp4Seconds === undefined || !Number.isFinite(c.mp4Seconds)) {
      out.push({ invariant: "I4", detail: `session ${c.sessionId}: recording ready but its MP4 could not be probed (recorded ${c.recordedSeconds.toFixed(2)} s)` });
    } else if (Math.abs(c.mp4Seconds - c.recordedSeconds) > toleranceSeconds) {
      out.push({ invariant: "I4", detail: `session ${c.sessionId}: MP4 lasts ${c.mp4Seconds.toFixed(2)} s, the session recorded ${c.recordedSeconds.toFixed(2)} s` });
    }
  }
  return out;
}

/** What node A said and served at one moment: GET /stream/{id}'s isActive, and the media playlist. */
export interface PlaybackObservation {
  at: number;
  isActive: boolean | undefined;
  /** HTTP status of the media playlist. */
  status: number;
  endlist: boolean;
  /** The URI of the playlist's last segment (undefined: none). */
  lastSegment: string | undefined;
}

/** Live between two observations: served, not ended, and a new segment appeared in between. */
export function playingBetween(prev: PlaybackObservation, cur: PlaybackObservation): boolean {
  return cur.status === 200 && !cur.endlist && cur.lastSegment !== undefined && cur.lastSegment !== prev.lastSegment;
}

const describeObservation = (o: PlaybackObservation) =>
  `${secs(o.at)} isActive=${o.isActive} playlist ${o.status}${o.endlist ? " ENDLIST" : ""} last=${o.lastSegment ?? "-"}`;

/**
 * I5: once settled (the last two observations, far enough apart for a segment to appear),
 * isActive is true exactly when the playlist is live. `what` names the moment.
 */
export function activeAgreesWithPlayback(observations: PlaybackObservation[], what: string): Violation[] {
  if (observations.length < 2) return [{ invariant: "I5", detail: `${what}: fewer than two observations` }];
  const [prev, cur] = observations.slice(-2) as [PlaybackObservation, PlaybackObservation];
  const playing = playingBetween(prev, cur);
  if (cur.isActive === playing && prev.isActive === cur.isActive) return [];
  return [
    {
      invariant: "I5",
      detail: `${what}: isActive=${cur.isActive} but the playlist through A is ${playing ? "live" : "not live"}; observed: ${observations.slice(-6).map(describeObservation).join("; ")}`,
    },
  ];
}
