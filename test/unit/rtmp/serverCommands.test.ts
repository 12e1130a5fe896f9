import { decodeAmf0, encodeAmf0, type Amf0Value } from "../../../src/rtmp/amf0";
import { RtmpType } from "../../../src/rtmp/chunks";
import { CapsEx, FourCcInfo } from "../../../src/rtmp/enhancedConnect";
import {
  answerPlay,
  answerPublish,
  endPublishWithStatus,
  endPlay,
  handleCommand,
  initialServerState,
  reconnectRequest,
  type CommandStep,
  type Outgoing,
  type ServerSessionState,
  type ServerSettings,
} from "../../../src/rtmp/serverCommands";

const settings: ServerSettings = { caps: { video: { hvc1: FourCcInfo.canForward }, audio: { Opus: FourCcInfo.canForward }, capsEx: CapsEx.reconnect }, windowAckSize: 2_500_000, chunkSize: 4096, maxStreams: 2 };

/** What an outgoing item says, readably: a command's values, or a control message's type and bytes. */
function said(o: Outgoing): unknown {
  if (o.kind === "chunkSize") return `chunk size ${o.size}`;
  const m = o.message;
  if (m.type === RtmpType.amf0Command) return m.streamId === 0 ? decodeAmf0(m.payload) : { stream: m.streamId, values: decodeAmf0(m.payload) };
  return `type ${m.type}: ${m.payload.toString("hex")}`;
}

const connectObject = { app: "live", tcUrl: "rtmp://host/live", flashVer: "FMLE/3.0", capsEx: CapsEx.reconnect, fourCcList: ["hvc1"] };
type Command = [values: Amf0Value[], streamId?: number];
const CONNECT: Command = [["connect", 1, connectObject]];
const CREATE: Command = [["createStream", 4, null]];
const PUBLISH: Command = [["publish", 0, null, "sk_key", "live"], 1];
// As ffmpeg sends it: a transaction id, the name, then the start (-2000: live or recorded).
const PLAY: Command = [["play", 5, null, "a", -2000], 1];

/** The commands in order from a new connection; the last step and the state before it. */
function run(commands: Command[], start: ServerSessionState = initialServerState()): CommandStep {
  let last: CommandStep = { state: start, send: [], events: [] };
  for (const [values, streamId = 0] of commands) last = handleCommand(last.state, values, streamId, settings);
  return last;
}

const publishing = (): ServerSessionState => answerPublish(run([CONNECT, CREATE, PUBLISH]).state, { ok: true }).state;
const playing = (): ServerSessionState => answerPlay(run([CONNECT, CREATE, PLAY]).state, { ok: true }).state;
const error = (code: string, description: string) => ({ level: "error", code, description });

describe("handleCommand: one command, its answer, what happened", () => {
  it("connect: window, peer bandwidth, chunk size, then _result with Connect.Success and our E-RTMP caps; app, tcUrl and caps remembered", () => {
    const step = run([CONNECT]);
    expect(step.send.map(said)).toEqual([
      "type 5: 002625a0",
      "type 6: 002625a002",
      "chunk size 4096",
      [
        "_result",
        1,
        { fmsVer: "FMS/3,0,1,123", capabilities: 31, mode: 1, fourCcList: ["hvc1", "Opus"], videoFourCcInfoMap: { hvc1: 4 }, audioFourCcInfoMap: { Opus: 4 }, capsEx: 1 },
        { level: "status", code: "NetConnection.Connect.Success", description: "Connection succeeded.", objectEncoding: 0 },
      ],
    ]);
    expect(step.state).toMatchObject({ phase: "connected", app: "live", tcUrl: "rtmp://host/live", caps: { capsEx: CapsEx.reconnect, fourCcList: ["hvc1"] } });
    expect(step.close).toBeUndefined();
  });

  it.each<[string, Command[], unknown[], string, boolean]>([
    ["connect naming no application", [[["connect", 1, { tcUrl: "rtmp://host/" }]]], [["_error", 1, null, error("NetConnection.Connect.Rejected", "connect names no application")]], "ended", true],
    ["connect without a command object", [[["connect", 1, null]]], [["_error", 1, null, error("NetConnection.Connect.Rejected", "connect names no application")]], "ended", true],
    ["a second connect", [CONNECT, CONNECT], [["_error", 1, null, error("NetConnection.Call.Failed", "already connected")]], "connected", false],
    ["createStream before connect", [CREATE], [["_error", 4, null, error("NetConnection.Call.Failed", "createStream before connect")]], "ended", true],
    ["publish before connect (no transaction id: nothing to answer)", [PUBLISH], [], "ended", true],
    ["releaseStream", [CONNECT, [["releaseStream", 2, null, "sk_key"]]], [["_result", 2, null, undefined]], "connected", false],
    ["FCPublish", [CONNECT, [["FCPublish", 3, null, "sk_key"]]], [["onFCPublish", 0, null, { code: "NetStream.Publish.Start", description: "sk_key" }]], "connected", false],
    ["createStream", [CONNECT, CREATE], [["_result", 4, null, 1]], "connected", false],
    ["createStream beyond maxStreams", [CONNECT, CREATE, CREATE, CREATE], [["_error", 4, null, error("NetConnection.Call.Failed", "at most 2 streams")]], "connected", false],
    ["publish on a stream never created", [CONNECT, [["publish", 0, null, "k", "live"], 7]], [{ stream: 7, values: ["onStatus", 0, null, error("NetStream.Publish.BadConnection", "no stream 7: createStream first")] }], "connected", false],
    ["publish naming no stream", [CONNECT, CREATE, [["publish", 0, null, ""], 1]], [{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Publish.BadName", "publish names no stream")] }], "connected", true],
    ["a second publish while the first awaits its answer", [CONNECT, CREATE, PUBLISH, PUBLISH], [{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Publish.BadConnection", "this connection already publishes")] }], "deciding", false],
    ["play on a stream never created", [CONNECT, [["play", 0, null, "x"], 7]], [{ stream: 7, values: ["onStatus", 0, null, error("NetStream.Play.Failed", "no stream 7: createStream first")] }], "connected", true],
    ["play naming no stream", [CONNECT, CREATE, [["play", 0, null, ""], 1]], [{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Play.StreamNotFound", "play names no stream")] }], "connected", true],
    ["play without any name", [CONNECT, CREATE, [["play", 0, null], 1]], [{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Play.StreamNotFound", "play names no stream")] }], "connected", true],
    ["play on a publishing connection", [CONNECT, CREATE, PUBLISH, PLAY], [{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Play.Failed", "this connection publishes")] }], "deciding", true],
    ["a second play while the first awaits its answer", [CONNECT, CREATE, PLAY, PLAY], [{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Play.Failed", "this connection already plays")] }], "playDeciding", true],
    ["publish on a connection that plays", [CONNECT, CREATE, PLAY, PUBLISH], [{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Publish.BadConnection", "this connection plays")] }], "playDeciding", false],
    ["play2", [CONNECT, CREATE, [["play2", 0, null, { streamName: "x" }], 1]], [{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Play.Failed", "play2 is not supported: use play")] }], "connected", true],
    ["getStreamLength (a live stream's is 0)", [CONNECT, [["getStreamLength", 5, null, "x"]]], [["_result", 5, null, 0]], "connected", false],
    ["getStreamLength without a transaction id", [CONNECT, [["getStreamLength", 0, null, "x"]]], [], "connected", false],
    ["an unknown command with a transaction id", [CONNECT, [["setBitrate", 6, null, 100]]], [["_error", 6, null, error("NetConnection.Call.Failed", "unknown command setBitrate")]], "connected", false],
    ["an unknown command without one", [CONNECT, [["onCustom", 0, null]]], [], "connected", false],
    ["a client's own _result", [CONNECT, [["_result", 9, null]]], [], "connected", false],
    ["a command whose name is not a string", [CONNECT, [[42, 1]]], [], "connected", false],
  ])("%s", (_what, commands, sent, phase, close) => {
    const step = run(commands);
    expect(step.send.map(said)).toEqual(sent);
    expect(step.state.phase).toBe(phase);
    expect(step.close ?? false).toBe(close);
    expect(step.events).toEqual([]);
  });

  it("publish on a created stream asks for a decision (type 'live' unless said), and answers nothing yet", () => {
    const step = run([CONNECT, CREATE, PUBLISH]);
    expect(step.events).toEqual([{ kind: "publish", request: { streamId: 1, streamName: "sk_key", type: "live" } }]);
    expect(step.send).toEqual([]);
    expect(step.state.phase).toBe("deciding");
    expect(run([CONNECT, CREATE, [["publish", 0, null, "k"], 1]]).events).toEqual([{ kind: "publish", request: { streamId: 1, streamName: "k", type: "live" } }]);
    expect(run([CONNECT, CREATE, [["publish", 0, null, "k", "record"], 1]]).events).toEqual([{ kind: "publish", request: { streamId: 1, streamName: "k", type: "record" } }]);
  });

  it.each<[string, Command, string, unknown[]]>([
    ["FCUnpublish", [["FCUnpublish", 7, null, "sk_key"]], "FCUnpublish", [["onFCUnpublish", 0, null, { code: "NetStream.Unpublish.Success", description: "sk_key" }]]],
    ["deleteStream of the published stream", [["deleteStream", 8, null, 1]], "deleteStream", []],
    ["closeStream on the published stream", [["closeStream", 0, null], 1], "closeStream", []],
  ])("%s ends the publish, once", (_what, command, name, sent) => {
    const step = run([command], publishing());
    expect(step.events).toEqual([{ kind: "end", reason: { kind: "unpublished", command: name } }]);
    expect(step.send.map(said)).toEqual(sent);
    expect(step.state.phase).toBe("ended");
    // What follows (ffmpeg sends deleteStream after FCUnpublish) ends nothing more.
    expect(run([[["deleteStream", 9, null, 1]]], step.state).events).toEqual([]);
  });

  it("deleteStream or closeStream of another stream ends nothing", () => {
    const start = run([CREATE], publishing()).state;
    expect(run([[["deleteStream", 8, null, 2]]], start)).toMatchObject({ events: [], state: { phase: "publishing", streams: [1] } });
    expect(run([[["closeStream", 0, null], 2]], start)).toMatchObject({ events: [], state: { phase: "publishing" } });
  });
});

describe("answerPublish: the caller's decision", () => {
  it("accepted: Stream Begin for the stream, then NetStream.Publish.Start on it", () => {
    const step = answerPublish(run([CONNECT, CREATE, PUBLISH]).state, { ok: true });
    expect(step.send.map(said)).toEqual(["type 4: 000000000001", { stream: 1, values: ["onStatus", 0, null, { level: "status", code: "NetStream.Publish.Start", description: "sk_key is now published." }] }]);
    expect(step.state.phase).toBe("publishing");
    expect(step.close).toBeUndefined();
  });

  it("refused: the caller's code and description at level error, then close", () => {
    const step = answerPublish(run([CONNECT, CREATE, PUBLISH]).state, { ok: false, code: "NetStream.Publish.Denied", description: "stream is disabled" });
    expect(step.send.map(said)).toEqual([{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Publish.Denied", "stream is disabled")] }]);
    expect(step).toMatchObject({ state: { phase: "ended" }, close: true });
  });

  it("an answer with no publish awaiting it (the publisher left first) sends nothing", () => {
    const ended = run([[["FCUnpublish", 7, null, "sk_key"]]], { ...run([CONNECT, CREATE, PUBLISH]).state }).state;
    expect(ended.phase).toBe("ended");
    expect(answerPublish(ended, { ok: true })).toMatchObject({ send: [], state: { phase: "ended" } });
  });
});

describe("endPublishWithStatus: the server ends a publish under way", () => {
  it("sends the error status on the publish's stream, then closes; no media is taken after it", () => {
    const step = endPublishWithStatus(publishing(), "NetStream.Publish.Rejected", "replaced by a newer publisher of this stream");
    expect(step.send.map(said)).toEqual([{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Publish.Rejected", "replaced by a newer publisher of this stream")] }]);
    expect(step).toMatchObject({ state: { phase: "ended" }, close: true });
  });

  it("on a connection with no publish (a player, a connection that never published) only closes", () => {
    for (const state of [playing(), run([CONNECT]).state]) {
      const step = endPublishWithStatus(state, "NetStream.Publish.Rejected", "no");
      expect(step.send).toEqual([]);
      expect(step.close).toBe(true);
    }
  });
});

describe("play: a local reader asks for a stream", () => {
  it("play on a created stream asks for a decision, and answers nothing yet", () => {
    const step = run([CONNECT, CREATE, PLAY]);
    expect(step.events).toEqual([{ kind: "play", request: { streamId: 1, streamName: "a" } }]);
    expect(step.send).toEqual([]);
    expect(step.state).toMatchObject({ phase: "playDeciding", play: { streamId: 1, streamName: "a" } });
    expect(step.close).toBeUndefined();
  });

  it.each<[string, Command, string]>([
    ["deleteStream of the played stream", [["deleteStream", 8, null, 1]], "deleteStream"],
    ["closeStream on the played stream", [["closeStream", 0, null], 1], "closeStream"],
  ])("%s ends the play, once", (_what, command, cause) => {
    const step = run([command], playing());
    expect(step.events).toEqual([{ kind: "playEnd", cause }]);
    expect(step.send).toEqual([]);
    expect(step.state.phase).toBe("ended");
    expect(run([command], step.state).events).toEqual([]);
  });

  it("deleteStream of the stream while the play awaits its answer ends it; the answer then sends nothing", () => {
    const step = run([[["deleteStream", 8, null, 1]]], run([CONNECT, CREATE, PLAY]).state);
    expect(step.events).toEqual([{ kind: "playEnd", cause: "deleteStream" }]);
    expect(answerPlay(step.state, { ok: true })).toMatchObject({ send: [], events: [], state: { phase: "ended" } });
  });

  it("FCUnpublish, or deleteStream of another stream, ends no play", () => {
    expect(run([[["FCUnpublish", 7, null, "a"]]], playing())).toMatchObject({ events: [], send: [], state: { phase: "playing" } });
    const start = run([CREATE], playing()).state;
    expect(run([[["deleteStream", 8, null, 2]]], start)).toMatchObject({ events: [], state: { phase: "playing", streams: [1] } });
  });
});

describe("answerPlay: the caller's decision", () => {
  it("accepted: Stream Begin, NetStream.Play.Reset and .Start on the stream, then |RtmpSampleAccess as data on it", () => {
    const step = answerPlay(run([CONNECT, CREATE, PLAY]).state, { ok: true });
    expect(step.send.map(said)).toEqual([
      "type 4: 000000000001",
      { stream: 1, values: ["onStatus", 0, null, { level: "status", code: "NetStream.Play.Reset", description: "Playing and resetting a." }] },
      { stream: 1, values: ["onStatus", 0, null, { level: "status", code: "NetStream.Play.Start", description: "Started playing a." }] },
      `type 18: ${encodeAmf0(["|RtmpSampleAccess", true, true]).toString("hex")}`,
    ]);
    const data = step.send[3]!.kind === "message" ? step.send[3]!.message : undefined;
    expect(data).toMatchObject({ streamId: 1, csid: 5 });
    expect(step.state.phase).toBe("playing");
    expect(step.close).toBeUndefined();
    expect(step.events).toEqual([]);
  });

  it("refused: the caller's code and description at level error, then close", () => {
    const step = answerPlay(run([CONNECT, CREATE, PLAY]).state, { ok: false, code: "NetStream.Play.StreamNotFound", description: "no live stream a" });
    expect(step.send.map(said)).toEqual([{ stream: 1, values: ["onStatus", 0, null, error("NetStream.Play.StreamNotFound", "no live stream a")] }]);
    expect(step).toMatchObject({ state: { phase: "ended" }, close: true });
  });

  it.each<[string, ServerSessionState]>([
    ["a connection that publishes", run([CONNECT, CREATE, PUBLISH]).state],
    ["a play already answered", playing()],
  ])("an answer for %s sends nothing", (_what, state) => {
    expect(answerPlay(state, { ok: true })).toEqual({ state, send: [], events: [] });
  });
});

describe("endPlay: the played stream ended", () => {
  it("Stream EOF, Play.UnpublishNotify, Play.Stop on the stream, the play's end, then close", () => {
    const step = endPlay(playing());
    expect(step.send.map(said)).toEqual([
      "type 4: 000100000001",
      { stream: 1, values: ["onStatus", 0, null, { level: "status", code: "NetStream.Play.UnpublishNotify", description: "a is now unpublished." }] },
      { stream: 1, values: ["onStatus", 0, null, { level: "status", code: "NetStream.Play.Stop", description: "Stopped playing a." }] },
    ]);
    expect(step).toMatchObject({ state: { phase: "ended" }, events: [{ kind: "playEnd", cause: "streamEnded" }], close: true });
  });

  it.each<[string, ServerSessionState]>([
    ["a play awaiting its answer", run([CONNECT, CREATE, PLAY]).state],
    ["a publisher", publishing()],
    ["a play that ended", endPlay(playing()).state],
  ])("does nothing for %s", (_what, state) => {
    expect(endPlay(state)).toEqual({ state, send: [], events: [] });
  });
});

describe("reconnectRequest (E-RTMP)", () => {
  it("asks a client whose caps say it can reconnect, with the new tcUrl and why", () => {
    const request = reconnectRequest(publishing(), "rtmp://other/live", "restarting");
    expect(request && said(request)).toEqual(["onStatus", 0, null, { level: "status", code: "NetConnection.Connect.ReconnectRequest", description: "restarting", tcUrl: "rtmp://other/live" }]);
  });

  it.each<[string, ServerSessionState]>([
    ["a legacy client", run([[["connect", 1, { app: "live" }]]]).state],
    ["a client not yet connected", initialServerState()],
    ["a connection whose publish ended", run([[["FCUnpublish", 7, null, "k"]]], publishing()).state],
  ])("asks nothing of %s", (_what, state) => {
    expect(reconnectRequest(state)).toBeUndefined();
  });
});
