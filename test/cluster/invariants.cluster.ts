import {
  activeAgreesWithPlayback,
  atMostOneOpenSession,
  atMostOneServer,
  playingBetween,
  readyRecordingsCover,
  recordingNeverReopens,
  startedIdleAlternate,
  type LifecycleEvent,
  type PlaybackObservation,
} from "./invariants";

describe("I1 atMostOneServer", () => {
  it.each([
    ["one node throughout", [["B"], ["B"], ["C"]], 0],
    ["nobody (between sessions)", [[], ["B"], []], 0],
    ["two nodes in one sample", [["B"], ["B", "C"], ["C"]], 1],
    ["one overlap over three samples is one finding", [["B", "C"], ["B", "C"], ["C", "B"]], 1],
    ["two separate overlaps", [["B", "C"], ["C"], ["B", "C"]], 2],
    ["the same node twice (two renditions' processes) is one node", [["B", "B"]], 0],
  ])("%s", (_name, nodes, violations) => {
    const samples = (nodes as string[][]).map((n, i) => ({ at: i * 200, streamId: "s", nodes: n }));
    expect(atMostOneServer(samples)).toHaveLength(violations as number);
  });

  it("says which nodes, for which stream, and when", () => {
    const [v] = atMostOneServer([
      { at: 1000, streamId: "s1", nodes: ["C", "B"] },
      { at: 1200, streamId: "s1", nodes: ["B", "C"] },
    ]);
    expect(v).toEqual({ invariant: "I1", detail: "stream s1: live ffmpeg on B and C at once, +1.0 s..+1.2 s (2 samples)" });
  });

  it("keeps streams apart: one node each for two streams is fine", () => {
    expect(atMostOneServer([{ at: 0, streamId: "x", nodes: ["B"] }, { at: 0, streamId: "y", nodes: ["C"] }])).toEqual([]);
  });
});

describe("I2 atMostOneOpenSession", () => {
  const open = (...ids: string[]) => ids.map((id) => ({ id, node: id.toUpperCase() }));
  it.each([
    ["none, then one", [[], open("b")], 0],
    ["one replaced by another", [open("b"), open("c")], 0],
    ["two at once", [open("b"), open("b", "c"), open("c")], 1],
  ])("%s", (_name, samples, violations) => {
    expect(atMostOneOpenSession((samples as { id: string; node: string }[][]).map((o, i) => ({ at: i, streamId: "s", open: o })))).toHaveLength(violations as number);
  });

  it("names the sessions and their nodes", () => {
    expect(atMostOneOpenSession([{ at: 2500, streamId: "s", open: open("c", "b") }])[0]!.detail).toBe("stream s: 2 open sessions (b@B, c@C), +2.5 s..+2.5 s (1 samples)");
  });
});

describe("I3 startedIdleAlternate", () => {
  const ev = (id: string, name: string, sessionId: string, streamId = "s"): LifecycleEvent => ({ id, name: `stream.${name}`, sessionId, streamId, at: 0 });
  it.each([
    ["started, idle, started, idle", [ev("1", "started", "a"), ev("2", "idle", "a"), ev("3", "started", "b"), ev("4", "idle", "b")], 0],
    ["a retried delivery (same id) counts once", [ev("1", "started", "a"), ev("1", "started", "a"), ev("2", "idle", "a")], 0],
    ["nothing yet after started", [ev("1", "started", "a")], 0],
    ["idle first", [ev("1", "idle", "a")], 1],
    ["two idles for one session (janitor and node)", [ev("1", "started", "a"), ev("2", "idle", "a"), ev("3", "idle", "a")], 1],
    ["a session idle and live again (a reconnect in its window)", [ev("1", "started", "a"), ev("2", "idle", "a"), ev("3", "started", "a"), ev("4", "idle", "a")], 0],
    ["the new session's started before the old one's idle", [ev("1", "started", "a"), ev("2", "started", "b"), ev("3", "idle", "a"), ev("4", "idle", "b")], 2],
    ["other events are not its business", [ev("1", "started", "a"), { ...ev("2", "x", "a"), name: "recording.ready" }, ev("3", "idle", "a")], 0],
  ])("%s", (_name, events, violations) => {
    expect(startedIdleAlternate(events as LifecycleEvent[])).toHaveLength(violations as number);
  });

  it("judges each stream on its own", () => {
    expect(startedIdleAlternate([ev("1", "started", "a", "x"), ev("2", "started", "b", "y"), ev("3", "idle", "a", "x")])).toEqual([]);
  });
});

describe("I4 recordings", () => {
  it.each([
    ["waiting, then ready", ["waiting", "ready"], 0],
    ["ready stays ready", ["ready", "ready"], 0],
    ["ready, then waiting again", ["waiting", "ready", "waiting"], 1],
    ["failed, then waiting again", ["failed", "waiting"], 1],
    ["null (no recording) then waiting", [null, "waiting"], 0],
  ])("%s", (_name, statuses, violations) => {
    expect(recordingNeverReopens((statuses as (string | null)[]).map((status, i) => ({ at: i, sessionId: "r", status })))).toHaveLength(violations as number);
  });

  it.each([
    ["within the tolerance", "ready", 10, 10.9, 0],
    ["too short", "ready", 10, 7, 1],
    ["unreadable", "ready", 10, undefined, 1],
    ["failed recordings have no MP4 to check", "failed", 10, undefined, 0],
    ["waiting recordings neither", "waiting", 10, undefined, 0],
  ])("%s", (_name, status, recorded, mp4, violations) => {
    expect(readyRecordingsCover([{ sessionId: "r", status: status as string, recordedSeconds: recorded as number, mp4Seconds: mp4 as number | undefined }])).toHaveLength(violations as number);
  });
});

describe("I5 activeAgreesWithPlayback", () => {
  const obs = (at: number, isActive: boolean | undefined, last: string | undefined, opts: Partial<PlaybackObservation> = {}): PlaybackObservation => ({
    at,
    isActive,
    status: 200,
    endlist: false,
    lastSegment: last,
    ...opts,
  });

  it.each([
    ["a new segment, no ENDLIST", obs(0, true, "1.m4s"), obs(1500, true, "2.m4s"), true],
    ["no new segment", obs(0, true, "1.m4s"), obs(1500, true, "1.m4s"), false],
    ["ENDLIST", obs(0, true, "1.m4s"), obs(1500, true, "2.m4s", { endlist: true }), false],
    ["404", obs(0, true, "1.m4s"), obs(1500, true, undefined, { status: 404 }), false],
  ])("playing: %s", (_name, prev, cur, playing) => {
    expect(playingBetween(prev as PlaybackObservation, cur as PlaybackObservation)).toBe(playing);
  });

  it.each([
    ["active and playing", [obs(0, true, "1"), obs(1500, true, "2")], 0],
    ["inactive and ended", [obs(0, false, "9", { endlist: true }), obs(1500, false, "9", { endlist: true })], 0],
    ["inactive but playing (a stale end)", [obs(0, false, "1"), obs(1500, false, "2")], 1],
    ["active but frozen", [obs(0, true, "1"), obs(1500, true, "1")], 1],
    ["isActive changed between the two", [obs(0, false, "1"), obs(1500, true, "2")], 1],
    ["one observation is not enough", [obs(0, true, "1")], 1],
    ["only the last two count", [obs(0, false, "1"), obs(1500, true, "2"), obs(3000, true, "3")], 0],
  ])("%s", (_name, seen, violations) => {
    expect(activeAgreesWithPlayback(seen as PlaybackObservation[], "now")).toHaveLength(violations as number);
  });

  it("shows what it observed", () => {
    const [v] = activeAgreesWithPlayback([obs(0, false, "a.m4s"), obs(1500, false, "b.m4s")], "after SIGCONT");
    expect(v!.detail).toBe("after SIGCONT: isActive=false but the playlist through A is live; observed: +0.0 s isActive=false playlist 200 last=a.m4s; +1.5 s isActive=false playlist 200 last=b.m4s");
  });
});
