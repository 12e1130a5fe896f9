// Enhanced RTMP capability negotiation (E-RTMP v2, "Enhancing NetConnection connect Command")
// and the reconnect request. The client lists what it can do in its connect command object; the
// server answers with what it accepts in its _result properties.

import { Amf0EcmaArray, type Amf0Object, type Amf0Value } from "./amf0";

/** FourCcInfoMask: what a peer can do with one codec. */
export const FourCcInfo = { canDecode: 0x01, canEncode: 0x02, canForward: 0x04 } as const;

/** CapsExMask: extensions beyond legacy RTMP that are not tied to a codec. */
export const CapsEx = { reconnect: 0x01, multitrack: 0x02, modEx: 0x04, timestampNanoOffset: 0x08 } as const;

export interface ConnectCaps {
  /** FourCCs of the original E-RTMP list; "*" means any codec. */
  fourCcList: string[];
  /** FourCC (or "*") to FourCcInfo flags. */
  videoFourCcInfoMap: Record<string, number>;
  audioFourCcInfoMap: Record<string, number>;
  /** CapsEx flags; 0 for a legacy client, which must then get no reconnect request, multitrack or ModEx. */
  capsEx: number;
}

function flags(value: Amf0Value | undefined): number {
  // Flags are small unsigned integers; anything else from a peer counts as no flags at all.
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 0xffffffff ? value : 0;
}

function infoMap(value: Amf0Value | undefined): Record<string, number> {
  if (value === null || typeof value !== "object" || value instanceof Date || Array.isArray(value)) return {};
  // An ECMA array is as good as an object here: some encoders write maps that way.
  const entries = value instanceof Amf0EcmaArray ? value.entries : value;
  const out: Record<string, number> = {};
  for (const [key, v] of Object.entries(entries)) {
    const f = flags(v);
    if (f !== 0) out[key] = f;
  }
  return out;
}

/**
 * What a client announced in its connect command object. Missing or ill-typed properties read as
 * "not supported", so a legacy client (or a sloppy one) gets legacy treatment, never an exception.
 */
export function readConnectCaps(obj: Amf0Object): ConnectCaps {
  const list = obj["fourCcList"];
  return {
    fourCcList: Array.isArray(list) ? list.filter((v): v is string => typeof v === "string") : [],
    videoFourCcInfoMap: infoMap(obj["videoFourCcInfoMap"]),
    audioFourCcInfoMap: infoMap(obj["audioFourCcInfoMap"]),
    capsEx: flags(obj["capsEx"]),
  };
}

/**
 * Whether a client can take a codec in the given way: its info map decides (the "*" key overriding
 * the codec's own, as the spec says); a client with only the original fourCcList is taken to
 * handle every codec it lists.
 */
export function clientSupports(caps: ConnectCaps, media: "video" | "audio", fourCc: string, flag: number): boolean {
  const map = media === "video" ? caps.videoFourCcInfoMap : caps.audioFourCcInfoMap;
  if (Object.keys(map).length > 0) return ((map["*"] ?? map[fourCc] ?? 0) & flag) !== 0;
  return caps.fourCcList.includes("*") || caps.fourCcList.includes(fourCc);
}

export interface ServerCaps {
  /** FourCC to FourCcInfo flags, for each codec the server accepts. */
  video: Readonly<Record<string, number>>;
  audio: Readonly<Record<string, number>>;
  capsEx: number;
}

/**
 * The properties a server adds to its connect _result to state its E-RTMP support. The info maps
 * are what v2 clients read; fourCcList is there too for clients of the original E-RTMP.
 */
export function connectCapsReply(server: ServerCaps): Amf0Object {
  return {
    fourCcList: [...new Set([...Object.keys(server.video), ...Object.keys(server.audio)])],
    videoFourCcInfoMap: { ...server.video },
    audioFourCcInfoMap: { ...server.audio },
    capsEx: server.capsEx,
  };
}

export const RECONNECT_REQUEST_CODE = "NetConnection.Connect.ReconnectRequest";

/**
 * The info object of the onStatus a server sends to ask a client to reconnect (before a restart, or
 * to move it elsewhere). Without tcUrl the client reconnects to the same one; absent properties are
 * left out rather than sent as AMF undefined.
 */
export function reconnectRequestStatus(tcUrl?: string, description?: string): Amf0Object {
  const info: Amf0Object = { level: "status", code: RECONNECT_REQUEST_CODE };
  if (description !== undefined) info["description"] = description;
  if (tcUrl !== undefined) info["tcUrl"] = tcUrl;
  return info;
}
