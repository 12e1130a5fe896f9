// SDP for WebRTC in both directions, WHIP (RFC 9725) and WHEP: what an offer may carry, the
// answer's extra candidates, ICE servers as Link headers. Pure functions of text.

/** One negotiated track: its mid, payload type and format parameters. */
export interface OfferedTrack {
  mid: string;
  payloadType: number;
  /** The format's a=fmtp parameters, as offered (H.264's profile and packetization mode). */
  fmtp: string | undefined;
  /** The id the offer gives the playout-delay header extension, if it offers it (video). */
  playoutDelayId?: number;
}

/** Tells a WebRTC receiver how long it may hold frames before showing them (Chrome's extension). */
export const PLAYOUT_DELAY_URI = "http://www.webrtc.org/experiments/rtp-hdrext/playout-delay";

/** The id a section's `a=extmap` gives `uri` (one-byte header ids, 1-14), if any. */
function extmapId(s: Section, uri: string): number | undefined {
  for (const value of attrs(s, "extmap")) {
    const m = /^(\d{1,2})(?:\/\w+)? (\S+)/.exec(value);
    if (m && m[2] === uri && Number(m[1]) >= 1 && Number(m[1]) <= 14) return Number(m[1]);
  }
  return undefined;
}

export interface RestrictedOffer {
  /**
   * The offer with every format but the chosen ones removed (the answer can only pick those),
   * and without its ICE candidates: those are given to the peer once the answer has gone out.
   */
  sdp: string;
  /** The offer's candidates (`candidate:…`, by mid). */
  candidates: { mid: string; candidate: string }[];
  video: OfferedTrack;
  audio: (OfferedTrack & { channels: number }) | undefined;
}

/** The offer cannot be published: said to the client as a 400. */
export class OfferError extends Error {}

interface Section {
  lines: string[];
}

/** `a=<name>:<value>` lines of a section. */
const attrs = (s: Section, name: string) =>
  s.lines.filter((l) => l.startsWith(`a=${name}:`)).map((l) => l.slice(name.length + 3));

const DIRECTIONS = ["sendrecv", "sendonly", "recvonly", "inactive"];

/** The profile's place in `order` (4:2:0 8-bit profiles only), -1 for one onair does not take. */
function h264Rank(fmtp: string | undefined, order: string[]): number {
  const params = parseFmtp(fmtp);
  if (params.get("packetization-mode") !== "1") return -1;
  const profile = (params.get("profile-level-id") ?? "42e01f").toLowerCase();
  const rank = order.findIndex((p) => profile.startsWith(p));
  return rank === -1 ? -1 : rank;
}

function parseFmtp(fmtp: string | undefined): Map<string, string> {
  const params = new Map<string, string>();
  for (const part of (fmtp ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) params.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return params;
}

/** Payload type → [codec name, clock rate, channels] from a section's a=rtpmap lines. */
function rtpmaps(s: Section): Map<number, [string, number, number]> {
  const maps = new Map<number, [string, number, number]>();
  for (const value of attrs(s, "rtpmap")) {
    const m = /^(\d{1,3}) ([A-Za-z0-9_.-]+)\/(\d+)(?:\/(\d+))?$/.exec(value.trim());
    if (m) maps.set(Number(m[1]), [m[2]!.toLowerCase(), Number(m[3]), Number(m[4] ?? 1)]);
  }
  return maps;
}

function fmtpOf(s: Section, pt: number): string | undefined {
  const line = attrs(s, "fmtp").find((v) => v.startsWith(`${pt} `));
  return line?.slice(String(pt).length + 1).trim();
}

/** The section kept with one payload type: its m-line, and only that format's rtpmap/fmtp/rtcp-fb. */
function keepFormat(s: Section, pt: number): Section {
  const [mline, ...rest] = s.lines;
  const [media, port, proto] = mline!.slice(2).split(" ");
  const perFormat = /^a=(rtpmap|fmtp|rtcp-fb):(\d+|\*)[ ]/;
  const lines = rest.filter((l) => {
    // Retransmission groups name an rtx stream no longer offered.
    if (l.startsWith("a=ssrc-group:")) return false;
    const m = perFormat.exec(l);
    return !m || m[2] === "*" || Number(m[2]) === pt;
  });
  return { lines: [`m=${media} ${port} ${proto} ${pt}`, ...lines] };
}

function mediaType(s: Section): string {
  return s.lines[0]!.slice(2).split(" ")[0]!.toLowerCase();
}

function direction(s: Section): string {
  return s.lines.find((l) => DIRECTIONS.includes(l.slice(2)))?.slice(2) ?? "sendrecv";
}

/** What the offer's peer does with media: sends it to onair (WHIP) or plays what onair sends (WHEP). */
export type OfferRole = "publish" | "play";

/** The directions an offer's section may have for its role (as the offering peer sees them). */
const WANTED: Record<OfferRole, string[]> = { publish: ["sendonly", "sendrecv"], play: ["recvonly", "sendrecv"] };

/**
 * H.264 profiles in the order onair prefers them. Publishing: every decoder handles constrained
 * baseline, the ladder decodes any. Playing: the ladder's x264 encodes High profile without
 * B-frames, so a player that names High gets what it said it decodes; one that names only
 * baseline still gets it (browsers' H.264 decoders take any 4:2:0 8-bit profile). Chrome names
 * High only as Constrained High (640c: High without B-frames), which is just what x264 makes here.
 */
const H264_PROFILE_RANK: Record<OfferRole, string[]> = { publish: ["42e0", "4200", "4d00", "6400"], play: ["6400", "640c", "4d00", "42e0", "4200"] };

/**
 * Keeps what onair exchanges of an offer: one video track in H.264 (packetization mode 1, the
 * one ffmpeg's RTP depacketizer, FLV and libdatachannel's packetizer take), one optional audio
 * track in Opus. Every other format (VP8, AV1, retransmission, FEC) goes, so the answer cannot
 * select it. A player's offer also loses transport-wide congestion control: without it a
 * browser reports its bandwidth estimate as REMB, which is what onair's rendition choice reads.
 */
export function restrictOffer(offer: string, role: OfferRole = "publish"): RestrictedOffer {
  const verb = role === "publish" ? "ingests" : "plays";
  if (offer.length > 64 * 1024) throw new OfferError("the offer is larger than 64 KiB");
  const lines = offer.split(/\r?\n/).filter((l) => l !== "");
  if (lines[0] !== "v=0") throw new OfferError("the body is not an SDP offer (it must start with v=0)");
  const session: string[] = [];
  const sections: Section[] = [];
  for (const line of lines) {
    if (line.startsWith("m=")) sections.push({ lines: [line] });
    else if (sections.length > 0) sections[sections.length - 1]!.lines.push(line);
    else session.push(line);
  }
  const videos = sections.filter((s) => mediaType(s) === "video");
  const audios = sections.filter((s) => mediaType(s) === "audio");
  // A data channel (application) may come along; any other kind of media may not.
  const other = sections.find((s) => !["video", "audio", "application"].includes(mediaType(s)));
  if (other) throw new OfferError(`the offer may carry video, audio and a data channel only, not "${mediaType(other)}"`);
  if (videos.length !== 1) throw new OfferError(`the offer must carry one video track, it has ${videos.length}`);
  if (audios.length > 1) throw new OfferError(`the offer may carry one audio track, it has ${audios.length}`);

  const v = videos[0]!;
  if (!WANTED[role].includes(direction(v))) throw new OfferError(role === "publish" ? "the offer's video track does not send" : "the offer's video track does not receive");
  let chosen: { pt: number; rank: number } | undefined;
  for (const [pt, [codec, clock]] of rtpmaps(v)) {
    if (codec !== "h264" || clock !== 90000) continue;
    const rank = h264Rank(fmtpOf(v, pt), H264_PROFILE_RANK[role]);
    if (rank >= 0 && (!chosen || rank < chosen.rank)) chosen = { pt, rank };
  }
  if (!chosen) throw new OfferError(`the offer's video is not H.264 with packetization-mode=1 (baseline, main or high profile): onair ${verb} H.264 only`);
  const playoutDelayId = role === "play" ? extmapId(v, PLAYOUT_DELAY_URI) : undefined;
  const video: OfferedTrack = { mid: midOf(v), payloadType: chosen.pt, fmtp: fmtpOf(v, chosen.pt), ...(playoutDelayId ? { playoutDelayId } : {}) };

  let audio: RestrictedOffer["audio"];
  // Audio that does not flow the wanted way (no microphone, a muted player) is as good as none.
  const a = audios.find((s) => WANTED[role].includes(direction(s)));
  if (a) {
    const opus = [...rtpmaps(a)].find(([, [codec, clock]]) => codec === "opus" && clock === 48000);
    if (!opus) throw new OfferError(`the offer's audio is not Opus: onair ${verb} Opus audio over WebRTC`);
    audio = { mid: midOf(a), payloadType: opus[0], fmtp: fmtpOf(a, opus[0]), channels: opus[1][2] };
  }

  const kept = sections.map((s) => (s === v ? keepFormat(s, video.payloadType) : s === a ? keepFormat(s, audio!.payloadType) : s));
  if (role === "play") for (const s of kept) s.lines = s.lines.filter((l) => !isTransportCc(l));
  // Candidates are held back: a peer that has them starts its connectivity checks at once, and
  // they would reach the offering peer before the answer does, to an agent not ready for them.
  // The offering peer's own checks find the way meanwhile.
  const candidates: RestrictedOffer["candidates"] = [];
  for (const s of kept) {
    const mid = attrs(s, "mid")[0];
    s.lines = s.lines.filter((l) => {
      if (l === "a=end-of-candidates") return false;
      if (!l.startsWith("a=candidate:")) return true;
      if (mid !== undefined) candidates.push({ mid, candidate: l.slice(2) });
      return false;
    });
  }
  return { sdp: [...session, ...kept.flatMap((s) => s.lines)].join("\r\n") + "\r\n", candidates, video, audio };
}

/** transport-cc feedback and its header extension (draft-holmer-rmcat-transport-wide-cc-extensions). */
const isTransportCc = (line: string) => /^a=rtcp-fb:\S+ transport-cc/.test(line) || (line.startsWith("a=extmap:") && line.includes("transport-wide-cc"));

function midOf(s: Section): string {
  const mid = attrs(s, "mid")[0];
  if (mid === undefined || !/^[A-Za-z0-9_.-]{1,32}$/.test(mid)) throw new OfferError("every media section of the offer needs an a=mid of letters and digits (BUNDLE)");
  return mid;
}

/**
 * The answer with each host candidate also announced at `publicIp` (same port): a server
 * behind a 1:1 NAT is then reachable at its public address, as MediaMTX's additional hosts.
 */
export function withPublicAddress(answer: string, publicIp: string): string {
  const out: string[] = [];
  for (const line of answer.split(/\r?\n/)) {
    out.push(line);
    const m = /^a=candidate:(\S+) (\d+) (\S+) (\d+) (\S+) (\d+) typ host(.*)$/i.exec(line);
    if (m && m[5] !== publicIp) out.push(`a=candidate:${m[1]}p ${m[2]} ${m[3]} ${Number(m[4]) - 1} ${publicIp} ${m[6]} typ host${m[7]}`);
  }
  return out.join("\r\n");
}

/** `Link` header values for ICE servers (RFC 9725 §4.6), TURN ones with their credentials. */
export function iceServerLinks(servers: string[], username?: string, credential?: string): string[] {
  return servers.map((url) => {
    const turn = /^turns?:/.test(url) && username !== undefined && credential !== undefined;
    const quoted = (v: string) => `"${v.replace(/["\\]/g, "\\$&")}"`;
    return `<${url}>; rel="ice-server"` + (turn ? `; username=${quoted(username)}; credential=${quoted(credential)}; credential-type="password"` : "");
  });
}
