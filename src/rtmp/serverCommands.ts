import { amf0Text, encodeAmf0, isAmf0Object, type Amf0Object, type Amf0Value } from "./amf0";
import { controlMessage, RtmpType, UserControl, type RtmpMessage } from "./chunks";
import { CapsEx, connectCapsReply, readConnectCaps, reconnectRequestStatus, type ConnectCaps, type ServerCaps } from "./enhancedConnect";

// The command side of an RTMP server that takes publishers and players, as pure functions from (state,
// command) to (new state, what to send, what happened). No socket, no clock, no promise: the
// connection (server.ts) carries the bytes and asks its caller whether a publish or a play may go
// on, and every exchange an encoder or a player can start is a row of a table test here.

/**
 * Where a connection is: connect, then createStream and either publish (a caller's decision,
 * media in) or play (a caller's decision, media out), then the end. A connection does one of the two.
 */
export type ServerPhase = "new" | "connected" | "deciding" | "publishing" | "playDeciding" | "playing" | "ended";

export interface ServerSessionState {
  phase: ServerPhase;
  /** From connect: the application (`live`), the url the client says it connected to, and its E-RTMP caps. */
  app: string;
  tcUrl: string;
  caps: ConnectCaps;
  /** Message stream ids createStream gave out and not deleted since. */
  streams: number[];
  nextStreamId: number;
  /** The publish asked for (phase deciding) or going on (publishing). */
  publish?: PublishCommand;
  /** The play asked for (phase playDeciding) or going on (playing). */
  play?: PlayCommand;
}

export interface PlayCommand {
  streamId: number;
  streamName: string;
}

/** Why a play ended on the command side: the player stopped it, or this side said the stream ended (endPlay). */
export type PlayEndCause = "deleteStream" | "closeStream" | "streamEnded";

export interface PublishCommand {
  streamId: number;
  streamName: string;
  /** "live", "record" or "append", as the client sent it ("live" when it sent none). */
  type: string;
}

/** Why a publish ended, told once to whoever takes its media. */
export type PublishEndReason =
  /** The publisher said it is done: FCUnpublish, deleteStream or closeStream. */
  | { kind: "unpublished"; command: "FCUnpublish" | "deleteStream" | "closeStream" }
  /** The connection closed or failed without the publisher saying it was done. */
  | { kind: "disconnected"; error?: string }
  /** The publisher sent what is not RTMP, or the media listener failed. */
  | { kind: "protocol"; message: string }
  /** This side closed the connection (close(): a shutdown or a kick). */
  | { kind: "closed" };

/** Something to send: a whole message, or a Set Chunk Size, which changes how the writer cuts what follows. */
export type Outgoing = { kind: "message"; message: RtmpMessage } | { kind: "chunkSize"; size: number };

export type CommandEvent =
  | { kind: "publish"; request: PublishCommand }
  | { kind: "end"; reason: PublishEndReason }
  | { kind: "play"; request: PlayCommand }
  /** The play (asked for or going on) is over: whoever sends it media must stop. */
  | { kind: "playEnd"; cause: PlayEndCause };

export interface CommandStep {
  state: ServerSessionState;
  send: Outgoing[];
  events: CommandEvent[];
  /** Close the connection once what is sent has gone out (a refusal, a play attempt, a broken client). */
  close?: boolean;
}

export interface ServerSettings {
  caps: ServerCaps;
  /** The window after which the publisher must acknowledge what it received from us (and the bandwidth we announce). */
  windowAckSize: number;
  /** The chunk size we send with once connected. */
  chunkSize: number;
  /** createStream beyond this many live streams is refused: a publisher needs one. */
  maxStreams: number;
}

export const CSID_COMMAND = 3;
/** Chunk streams for what a player receives: one per kind, so each keeps its own header compression. */
export const CSID_AUDIO = 4;
export const CSID_DATA = 5;
export const CSID_VIDEO = 6;
/** Set Peer Bandwidth limit type 2, dynamic (spec 5.4.5). */
const LIMIT_DYNAMIC = 2;
/** Answers to our own calls, which we never make (but a client may echo): not commands to refuse. */
const IGNORED = new Set(["_result", "_error", "onStatus", "onBWDone"]);

export function initialServerState(): ServerSessionState {
  return { phase: "new", app: "", tcUrl: "", caps: readConnectCaps({}), streams: [], nextStreamId: 1 };
}

export function commandMessage(values: Amf0Value[], streamId = 0): Outgoing {
  return { kind: "message", message: { csid: CSID_COMMAND, type: RtmpType.amf0Command, streamId, timestamp: 0, payload: encodeAmf0(values) } };
}

function status(streamId: number, level: "status" | "error", code: string, description: string): Outgoing {
  return commandMessage(["onStatus", 0, null, { level, code, description }], streamId);
}

function callError(transaction: number, code: string, description: string): Outgoing {
  return commandMessage(["_error", transaction, null, { level: "error", code, description }]);
}

function userControl(event: number, streamId: number): Outgoing {
  const payload = Buffer.alloc(6);
  payload.writeUInt16BE(event, 0);
  payload.writeUInt32BE(streamId, 2);
  return { kind: "message", message: { csid: 2, type: RtmpType.userControl, streamId: 0, timestamp: 0, payload } };
}

function peerBandwidth(size: number): Outgoing {
  const payload = Buffer.alloc(5);
  payload.writeUInt32BE(size, 0);
  payload[4] = LIMIT_DYNAMIC;
  return { kind: "message", message: { csid: 2, type: RtmpType.setPeerBandwidth, streamId: 0, timestamp: 0, payload } };
}

const step = (state: ServerSessionState, send: Outgoing[] = [], events: CommandEvent[] = [], close?: boolean): CommandStep =>
  close ? { state, send, events, close } : { state, send, events };

function connect(state: ServerSessionState, transaction: number, object: Amf0Value | undefined, settings: ServerSettings): CommandStep {
  if (state.phase !== "new") return step(state, [callError(transaction, "NetConnection.Call.Failed", "already connected")]);
  const app = amf0Text(object, "app").replace(/\/+$/, "");
  if (!isAmf0Object(object) || app === "") {
    return step({ ...state, phase: "ended" }, [callError(transaction, "NetConnection.Connect.Rejected", "connect names no application")], [], true);
  }
  const properties: Amf0Object = { fmsVer: "FMS/3,0,1,123", capabilities: 31, mode: 1, ...connectCapsReply(settings.caps) };
  // We speak AMF0 only: objectEncoding 0 tells an AMF3-minded client so.
  const info: Amf0Object = { level: "status", code: "NetConnection.Connect.Success", description: "Connection succeeded.", objectEncoding: 0 };
  const send: Outgoing[] = [
    { kind: "message", message: controlMessage(RtmpType.windowAckSize, settings.windowAckSize) },
    peerBandwidth(settings.windowAckSize),
    { kind: "chunkSize", size: settings.chunkSize },
    commandMessage(["_result", transaction, properties, info]),
  ];
  return step({ ...state, phase: "connected", app, tcUrl: amf0Text(object, "tcUrl"), caps: readConnectCaps(object) }, send);
}

function createStream(state: ServerSessionState, transaction: number, settings: ServerSettings): CommandStep {
  if (state.streams.length >= settings.maxStreams) return step(state, [callError(transaction, "NetConnection.Call.Failed", `at most ${settings.maxStreams} streams`)]);
  const id = state.nextStreamId;
  return step({ ...state, streams: [...state.streams, id], nextStreamId: id + 1 }, [commandMessage(["_result", transaction, null, id])]);
}

function publish(state: ServerSessionState, streamId: number, args: Amf0Value[]): CommandStep {
  const [name, type] = args;
  if (state.phase !== "connected") {
    const why =
      state.phase === "deciding" || state.phase === "publishing"
        ? "this connection already publishes"
        : state.phase === "playDeciding" || state.phase === "playing"
          ? "this connection plays"
          : "publish after the stream ended";
    return step(state, [status(streamId, "error", "NetStream.Publish.BadConnection", why)]);
  }
  if (!state.streams.includes(streamId)) return step(state, [status(streamId, "error", "NetStream.Publish.BadConnection", `no stream ${streamId}: createStream first`)]);
  if (typeof name !== "string" || name === "") return step(state, [status(streamId, "error", "NetStream.Publish.BadName", "publish names no stream")], [], true);
  const request: PublishCommand = { streamId, streamName: name, type: typeof type === "string" && type !== "" ? type : "live" };
  return step({ ...state, phase: "deciding", publish: request }, [], [{ kind: "publish", request }]);
}

/** FCUnpublish, deleteStream, closeStream: the end of the publish (or for the latter two, the play) when they are about it. */
function unpublish(state: ServerSessionState, command: "FCUnpublish" | "deleteStream" | "closeStream", streamId: number, args: Amf0Value[]): CommandStep {
  const target = command === "deleteStream" ? args[0] : command === "closeStream" ? streamId : state.publish?.streamId;
  const streams = command === "deleteStream" ? state.streams.filter((s) => s !== target) : state.streams;
  const played = state.play !== undefined && target === state.play.streamId && (state.phase === "playing" || state.phase === "playDeciding");
  if (played && command !== "FCUnpublish") return step({ ...state, streams, phase: "ended" }, [], [{ kind: "playEnd", cause: command }]);
  const ours = state.publish !== undefined && target === state.publish.streamId;
  if (!ours || (state.phase !== "publishing" && state.phase !== "deciding")) return step({ ...state, streams });
  const send = command === "FCUnpublish" ? [commandMessage(["onFCUnpublish", 0, null, { code: "NetStream.Unpublish.Success", description: state.publish!.streamName }])] : [];
  return step({ ...state, streams, phase: "ended" }, send, [{ kind: "end", reason: { kind: "unpublished", command } }]);
}

/**
 * One command from the client: its name, transaction id and arguments, on message stream
 * `streamId`. Commands before connect close the connection (the client is not speaking RTMP as
 * an encoder does); unknown commands that expect an answer (a transaction id) get _error.
 */
export function handleCommand(state: ServerSessionState, values: Amf0Value[], streamId: number, settings: ServerSettings): CommandStep {
  const [name, rawTransaction, object, ...args] = values;
  const transaction = typeof rawTransaction === "number" ? rawTransaction : 0;
  if (typeof name !== "string") return step(state);
  if (state.phase === "new" && name !== "connect") {
    return step({ ...state, phase: "ended" }, transaction ? [callError(transaction, "NetConnection.Call.Failed", `${name} before connect`)] : [], [], true);
  }
  switch (name) {
    case "connect":
      return connect(state, transaction, object, settings);
    case "releaseStream":
      return step(state, transaction ? [commandMessage(["_result", transaction, null, undefined])] : []);
    case "FCPublish":
      return step(state, [commandMessage(["onFCPublish", 0, null, { code: "NetStream.Publish.Start", description: typeof args[0] === "string" ? args[0] : "" }])]);
    case "createStream":
      return createStream(state, transaction, settings);
    case "publish":
      return publish(state, streamId, args);
    case "FCUnpublish":
    case "deleteStream":
    case "closeStream":
      return unpublish(state, name, streamId, args);
    case "play":
      return play(state, streamId, args);
    case "play2":
      // play2 switches renditions of a multi-bitrate stream, which a live stream here has not.
      return step(state, [status(streamId, "error", "NetStream.Play.Failed", "play2 is not supported: use play")], [], true);
    case "getStreamLength":
      // ffmpeg asks before play; a live stream has no length, and 0 says so (ffmpeg then adds no duration).
      return step(state, transaction ? [commandMessage(["_result", transaction, null, 0])] : []);
    default:
      if (IGNORED.has(name) || transaction === 0) return step(state);
      return step(state, [callError(transaction, "NetConnection.Call.Failed", `unknown command ${name}`)]);
  }
}

function play(state: ServerSessionState, streamId: number, args: Amf0Value[]): CommandStep {
  const [name] = args;
  // A player that asks wrongly is told why and let go, as a refused publisher is.
  const failed = (code: string, why: string) => step(state, [status(streamId, "error", code, why)], [], true);
  if (state.phase !== "connected") {
    const why =
      state.phase === "deciding" || state.phase === "publishing"
        ? "this connection publishes"
        : state.phase === "playDeciding" || state.phase === "playing"
          ? "this connection already plays"
          : "play after the stream ended";
    return failed("NetStream.Play.Failed", why);
  }
  if (!state.streams.includes(streamId)) return failed("NetStream.Play.Failed", `no stream ${streamId}: createStream first`);
  if (typeof name !== "string" || name === "") return failed("NetStream.Play.StreamNotFound", "play names no stream");
  const request: PlayCommand = { streamId, streamName: name };
  return step({ ...state, phase: "playDeciding", play: request }, [], [{ kind: "play", request }]);
}

/** The caller's answer to a publish: accepted (Stream Begin, NetStream.Publish.Start) or refused (an error status, then close). */
export function answerPublish(state: ServerSessionState, decision: { ok: true } | { ok: false; code: string; description: string }): CommandStep {
  const request = state.publish;
  if (state.phase !== "deciding" || !request) return step(state);
  if (!decision.ok) return step({ ...state, phase: "ended" }, [status(request.streamId, "error", decision.code, decision.description)], [], true);
  const send = [userControl(UserControl.streamBegin, request.streamId), status(request.streamId, "status", "NetStream.Publish.Start", `${request.streamName} is now published.`)];
  return step({ ...state, phase: "publishing" }, send);
}

/**
 * The server ends a publish under way (the publisher was replaced, its stream suspended, its
 * media refused): an error status on its stream, then the close, so the encoder can show why.
 */
export function endPublishWithStatus(state: ServerSessionState, code: string, description: string): CommandStep {
  const publish = state.publish;
  if (!publish || (state.phase !== "publishing" && state.phase !== "deciding")) return step(state, [], [], true);
  return step({ ...state, phase: "ended" }, [status(publish.streamId, "error", code, description)], [], true);
}

/** The onStatus that asks a publisher to reconnect (E-RTMP), or undefined when its connect did not say it can. */
export function reconnectRequest(state: ServerSessionState, tcUrl?: string, description?: string): Outgoing | undefined {
  if (state.phase === "new" || (state.caps.capsEx & CapsEx.reconnect) === 0 || state.phase === "ended") return undefined;
  return commandMessage(["onStatus", 0, null, reconnectRequestStatus(tcUrl, description)]);
}

/** A data message on the played stream (|RtmpSampleAccess and the like). */
function dataMessage(values: Amf0Value[], streamId: number): Outgoing {
  return { kind: "message", message: { csid: CSID_DATA, type: RtmpType.amf0Data, streamId, timestamp: 0, payload: encodeAmf0(values) } };
}

/**
 * The caller's answer to a play. Accepted: Stream Begin, NetStream.Play.Reset and .Start (what
 * Flash players and ffmpeg wait for before media), and |RtmpSampleAccess, which lets a Flash-era
 * player read the media it gets (nginx-rtmp and node-media-server send it too). Refused: an error
 * status with the caller's code and description, then close.
 */
export function answerPlay(state: ServerSessionState, decision: { ok: true } | { ok: false; code: string; description: string }): CommandStep {
  const request = state.play;
  if (state.phase !== "playDeciding" || !request) return step(state);
  const { streamId, streamName } = request;
  if (!decision.ok) return step({ ...state, phase: "ended" }, [status(streamId, "error", decision.code, decision.description)], [], true);
  const send = [
    userControl(UserControl.streamBegin, streamId),
    status(streamId, "status", "NetStream.Play.Reset", `Playing and resetting ${streamName}.`),
    status(streamId, "status", "NetStream.Play.Start", `Started playing ${streamName}.`),
    dataMessage(["|RtmpSampleAccess", true, true], streamId),
  ];
  return step({ ...state, phase: "playing" }, send);
}

/**
 * The played stream has ended: Stream EOF, then NetStream.Play.UnpublishNotify and .Stop, which
 * ffmpeg's RTMP reader takes as the end of its input (it finishes its outputs and exits 0), then
 * close. Nothing when no play is going on.
 */
export function endPlay(state: ServerSessionState): CommandStep {
  const request = state.play;
  if (state.phase !== "playing" || !request) return step(state);
  const { streamId, streamName } = request;
  const send = [
    userControl(UserControl.streamEof, streamId),
    status(streamId, "status", "NetStream.Play.UnpublishNotify", `${streamName} is now unpublished.`),
    status(streamId, "status", "NetStream.Play.Stop", `Stopped playing ${streamName}.`),
  ];
  return step({ ...state, phase: "ended" }, send, [{ kind: "playEnd", cause: "streamEnded" }], true);
}
