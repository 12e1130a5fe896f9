import fs from "node:fs";
import path from "node:path";
import { PeerConnection, Audio, Video, RtcpReceivingSession, type Track } from "node-datachannel";
import { FFMPEG, FFPROBE, runProcess } from "./media";
import { tempDir } from "./server";
import { isRtcp, startsH264Keyframe } from "../../src/webrtc";

// A WHEP (draft-ietf-wish-whep) viewer: libdatachannel (node-datachannel) receiving H.264 and
// Opus, answering with RTCP as a browser does (receiver reports, REMB, PLI), keeping every RTP
// packet so a test can rebuild the streams and decode them with ffmpeg. ICE host candidates on
// loopback only: tests send nothing outside 127.0.0.0/8.

/** The resource's state, as GET on it answers. */
export interface WhepState {
  playbackId: string;
  rendition: { index: number; name: string; width: number; height: number; bitrate: number };
  estimatedBitrate: number | null;
  framesSent: number;
  /** Opus packets the server has sent this viewer. */
  audioSent: number;
  switches: number;
  /** The bit rate the receiver's loss reports allow; null while they allow any. */
  lossLimitedBitrate: number | null;
  /** Retransmissions the receiver asked for. */
  nacks: number;
}

export interface WhepViewer {
  status: number;
  /** The 201's Location, resolved against the endpoint. */
  resource: string | undefined;
  headers: Headers;
  /** The answer's SDP, or the error body of a refusal. */
  body: string;
  /** The POST's round trip (offer sent → answer read), ms. */
  answerMs: number;
  /** From the offer sent to the first video packet that starts a keyframe, ms; undefined until then. */
  readonly firstFrameMs: number | undefined;
  /** Ends the resource with DELETE (its status), then closes the peer. */
  stop(): Promise<number>;
  /** Closes the peer without a DELETE: the viewer just goes away. */
  close(): void;
  /** GET on the resource. */
  state(): Promise<WhepState>;
  /** Sends a REMB with this estimate (bits per second) on the video track. */
  requestBitrate(bps: number): boolean;
  /** Sends a PLI on the video track. */
  requestKeyframe(): boolean;
  /** RTP packets received so far (RTCP not counted). */
  videoPackets(): number;
  audioPackets(): number;
  /** The H.264 received so far as an Annex B byte stream. */
  h264(): Buffer;
  /** The Opus packets received so far, in sequence order. */
  opusPackets(): Buffer[];
}

export interface WhepPlayOptions {
  /** Sent as `Authorization: Bearer …`. */
  bearer?: string;
  headers?: Record<string, string>;
  /** Every video RTP packet as it arrives (a bench reads frames live). */
  onVideoPacket?: (packet: Buffer) => void;
}

/**
 * libdatachannel rarely sees ICE fail on loopback, or has its peer closed, before its tracks
 * open (the WHIP client meets the same): like a player that retries a failed start, the viewer
 * ends the resource it got and asks once more.
 */
export async function whepPlay(url: string, opts: WhepPlayOptions = {}): Promise<WhepViewer> {
  try {
    return await whepPlayOnce(url, opts);
  } catch (err) {
    if (!(err instanceof FailedStart)) throw err;
    if (err.resource) await fetch(err.resource, { method: "DELETE" });
    return whepPlayOnce(url, opts);
  }
}

class FailedStart extends Error {
  constructor(
    message: string,
    readonly resource: string | undefined,
  ) {
    super(message);
  }
}

/** What one receiving track keeps: raw RTP in arrival order. */
interface Received {
  packets: Buffer[];
}

/** The payload types this viewer offers (the answer keeps them). */
const H264_PT = 96;
const OPUS_PT = 111;

async function whepPlayOnce(url: string, opts: WhepPlayOptions): Promise<WhepViewer> {
  const pc = new PeerConnection("whep-test-viewer", { iceServers: [], bindAddress: "127.0.0.1" });
  const video = new Video("0", "RecvOnly");
  // libdatachannel's defaults: packetization-mode=1, profile-level-id=42e01f, nack, nack pli, goog-remb.
  video.addH264Codec(H264_PT);
  const audio = new Audio("1", "RecvOnly");
  audio.addOpusCodec(OPUS_PT);
  const videoTrack = pc.addTrack(video);
  const audioTrack = pc.addTrack(audio);
  const states: string[] = [];
  pc.onStateChange((state) => states.push(state));
  const received = { video: receive(videoTrack), audio: receive(audioTrack) };
  let firstFrameAt: number | undefined;
  // Sorted by payload type, not by the track libdatachannel hands a packet to: its demultiplexer
  // maps SSRCs to tracks from the RTCP it sees too, and now and then files the audio's packets
  // under the video track (one run counted 0 audio packets and the audio among the video's).
  const onRtp = (packet: Buffer) => {
    if (isRtcp(packet) || packet.length < 2) return;
    if ((packet[1]! & 0x7f) === OPUS_PT) return void received.audio.packets.push(packet);
    received.video.packets.push(packet);
    opts.onVideoPacket?.(packet);
    if (firstFrameAt === undefined && startsH264Keyframe(packet)) firstFrameAt = performance.now();
  };
  videoTrack.onMessage(onRtp);
  audioTrack.onMessage(onRtp);

  pc.setLocalDescription();
  await until(() => pc.gatheringState() === "complete", 5000, () => "ICE gathering");
  const posted = performance.now();
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/sdp", ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}), ...opts.headers },
    body: pc.localDescription()!.sdp,
  });
  const body = await res.text();
  const answerMs = performance.now() - posted;
  const location = res.headers.get("location");
  const resource = location ? new URL(location, url).toString() : undefined;
  const refused = { status: res.status, resource, headers: res.headers, body, answerMs };
  if (res.status !== 201) {
    pc.close();
    return withoutPeer(refused);
  }
  await connect(pc, [videoTrack, audioTrack], body, resource, states);

  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    pc.close();
  };
  return {
    ...refused,
    get firstFrameMs() {
      return firstFrameAt === undefined ? undefined : firstFrameAt - posted;
    },
    close,
    stop: async () => {
      // DELETE first: a peer closed first may end the resource on its own, and the DELETE
      // that follows would find nothing.
      const status = (await fetch(resource!, { method: "DELETE" })).status;
      close();
      return status;
    },
    state: async () => {
      const r = await fetch(resource!);
      if (r.status !== 200) throw new Error(`GET ${resource} answered ${r.status}: ${await r.text()}`);
      return (await r.json()) as WhepState;
    },
    requestBitrate: (bps) => videoTrack.isOpen() && videoTrack.requestBitrate(bps),
    requestKeyframe: () => videoTrack.isOpen() && videoTrack.requestKeyframe(),
    videoPackets: () => received.video.packets.length,
    audioPackets: () => received.audio.packets.length,
    h264: () => depacketizeH264(inSequenceOrder(received.video.packets.flatMap((p) => parseRtp(p) ?? []))),
    opusPackets: () => inSequenceOrder(received.audio.packets.flatMap((p) => parseRtp(p) ?? [])).map((p) => p.payload),
  };
}

/** A receiving track answers with RTCP (receiver reports; REMB and PLI when asked). */
function receive(track: Track): Received {
  track.setMediaHandler(new RtcpReceivingSession());
  return { packets: [] };
}

/** Applies the answer and waits for both tracks to open; a start that fails throws FailedStart. */
async function connect(pc: PeerConnection, tracks: Track[], answer: string, resource: string | undefined, states: string[]): Promise<void> {
  const why = () => `client states: ${states.join(", ")}; now ${pc.state()} / ${pc.iceState()}`;
  try {
    pc.setRemoteDescription(answer, "answer");
  } catch (err) {
    const message = `${(err as Error).message} (${why()})`;
    pc.close();
    throw new FailedStart(message, resource);
  }
  const ended = () => pc.state() === "failed" || pc.state() === "closed";
  // ICE and DTLS on loopback take milliseconds; a lost DTLS flight is resent after 1, 2, 4… s:
  // 20 s bounds the wait on a loaded machine, not the speed.
  await until(() => tracks.every((t) => t.isOpen()) || ended(), 20_000, () => `tracks open (${why()})`);
  if (ended()) {
    const message = `the peer ${pc.state()} before its tracks opened (${why()})`;
    pc.close();
    throw new FailedStart(message, resource);
  }
}

function withoutPeer(answer: Pick<WhepViewer, "status" | "resource" | "headers" | "body" | "answerMs">): WhepViewer {
  return {
    ...answer,
    firstFrameMs: undefined,
    stop: async () => 0,
    close: () => undefined,
    state: () => Promise.reject(new Error(`no resource: the offer was answered ${answer.status}`)),
    requestBitrate: () => false,
    requestKeyframe: () => false,
    videoPackets: () => 0,
    audioPackets: () => 0,
    h264: () => Buffer.alloc(0),
    opusPackets: () => [],
  };
}

async function until(check: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`WHEP viewer: timed out after ${timeoutMs} ms waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// ---- RTP (RFC 3550) → H.264 (RFC 6184) and Opus ----

export interface RtpPacketView {
  ssrc: number;
  seq: number;
  payload: Buffer;
}

/** Header, CSRCs, header extension and padding taken off; undefined when malformed. */
export function parseRtp(packet: Buffer): RtpPacketView | undefined {
  if (packet.length < 12 || packet[0]! >> 6 !== 2) return undefined;
  let start = 12 + (packet[0]! & 0x0f) * 4;
  if (packet[0]! & 0x10) {
    if (packet.length < start + 4) return undefined;
    start += 4 + packet.readUInt16BE(start + 2) * 4;
  }
  const padding = packet[0]! & 0x20 ? packet[packet.length - 1]! : 0;
  const end = packet.length - padding;
  if (start >= end) return undefined;
  return { ssrc: packet.readUInt32BE(8), seq: packet.readUInt16BE(2), payload: packet.subarray(start, end) };
}

/** A packet with its place in the stream: consecutive packets have consecutive indexes. */
export interface OrderedPacket extends RtpPacketView {
  index: number;
}

/** Room between SSRCs' indexes: packets of two sources are never consecutive. */
const SOURCE_SPAN = 2 ** 40;

/**
 * Arrival order → sequence order: sequence numbers extended past their 16-bit wrap (relative to
 * the highest seen, so a late packet lands before it), duplicates dropped; each SSRC's packets
 * after those of the SSRCs heard before it.
 */
export function inSequenceOrder(packets: RtpPacketView[]): OrderedPacket[] {
  const sources = new Map<number, { base: number; highest: number; highestSeq: number; packets: Map<number, OrderedPacket> }>();
  for (const p of packets) {
    let source = sources.get(p.ssrc);
    if (!source) {
      source = { base: sources.size * SOURCE_SPAN, highest: p.seq, highestSeq: p.seq, packets: new Map() };
      sources.set(p.ssrc, source);
    }
    const delta = ((p.seq - source.highestSeq + 0x8000) & 0xffff) - 0x8000;
    const extended = source.highest + delta;
    if (delta > 0) {
      source.highest = extended;
      source.highestSeq = p.seq;
    }
    if (!source.packets.has(extended)) source.packets.set(extended, { ...p, index: source.base + extended });
  }
  return [...sources.values()].flatMap((s) => [...s.packets.values()].sort((a, b) => a.index - b.index));
}

const START_CODE = Buffer.from([0, 0, 0, 1]);
const STAP_A = 24;
const FU_A = 28;

/**
 * RFC 6184 packetization mode 1 → Annex B: single NAL units (types 1-23), STAP-A (24) and FU-A
 * (28). A fragmented unit missing its start, its end or any packet between is dropped whole,
 * as a decoder would have to; other types (STAP-B, MTAP, FU-B: not in mode 1) are skipped.
 */
export function depacketizeH264(packets: OrderedPacket[]): Buffer {
  const out: Buffer[] = [];
  let fragments: { parts: Buffer[]; last: number } | undefined;
  for (const { payload, index } of packets) {
    const type = payload[0]! & 0x1f;
    if (fragments && (type !== FU_A || index !== fragments.last + 1)) fragments = undefined;
    if (type >= 1 && type <= 23) {
      out.push(START_CODE, payload);
    } else if (type === STAP_A) {
      out.push(...unitsOfStapA(payload).flatMap((nal) => [START_CODE, nal]));
    } else if (type === FU_A && payload.length > 2) {
      const header = payload[1]!;
      if (header & 0x80) fragments = { parts: [Buffer.from([(payload[0]! & 0xe0) | (header & 0x1f)])], last: index };
      if (!fragments) continue;
      fragments.parts.push(payload.subarray(2));
      fragments.last = index;
      if (header & 0x40) {
        out.push(START_CODE, ...fragments.parts);
        fragments = undefined;
      }
    }
  }
  return Buffer.concat(out);
}

/** STAP-A: 16-bit sizes, each followed by its NAL unit; a size past the end drops the rest. */
function unitsOfStapA(payload: Buffer): Buffer[] {
  const units: Buffer[] = [];
  for (let at = 1; at + 2 <= payload.length; ) {
    const size = payload.readUInt16BE(at);
    if (size === 0 || at + 2 + size > payload.length) break;
    units.push(payload.subarray(at + 2, at + 2 + size));
    at += 2 + size;
  }
  return units;
}

// ---- Opus (RFC 6716) in Ogg (RFC 3533, RFC 7845) ----

/** Frame durations at 48 kHz by the TOC's config (RFC 6716 3.1): SILK, Hybrid, then CELT. */
const FRAME_SAMPLES = [
  ...[0, 1, 2].flatMap(() => [480, 960, 1920, 2880]),
  ...[0, 1].flatMap(() => [480, 960]),
  ...[0, 1, 2, 3].flatMap(() => [120, 240, 480, 960]),
];

/** The samples (at 48 kHz) one Opus packet decodes to, from its TOC byte and frame count. */
export function opusPacketSamples(packet: Buffer): number {
  if (packet.length === 0) return 0;
  const toc = packet[0]!;
  const code = toc & 0x03;
  const frames = code === 0 ? 1 : code < 3 ? 2 : packet.length > 1 ? packet[1]! & 0x3f : 0;
  return FRAME_SAMPLES[toc >> 3]! * frames;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let r = n << 24;
  for (let i = 0; i < 8; i++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
  return r >>> 0;
});

/** Ogg's page checksum: CRC-32, polynomial 0x04c11db7, no reflection, initial value and final xor 0. */
export function oggCrc(data: Buffer): number {
  let crc = 0;
  for (const byte of data) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ byte) & 0xff]!) >>> 0;
  return crc;
}

/** One Ogg page holding one whole packet. */
function oggPage(packet: Buffer, granule: bigint, sequence: number, flags: number, serial: number): Buffer {
  const lacing = [...Array(Math.floor(packet.length / 255)).fill(255), packet.length % 255];
  if (lacing.length > 255) throw new Error(`an Ogg page holds at most 65024 bytes of one packet, not ${packet.length}`);
  const header = Buffer.alloc(27 + lacing.length);
  header.write("OggS", 0, "latin1");
  header[5] = flags;
  header.writeBigInt64LE(granule, 6);
  header.writeUInt32LE(serial, 14);
  header.writeUInt32LE(sequence, 18);
  header[26] = lacing.length;
  Buffer.from(lacing).copy(header, 27);
  const page = Buffer.concat([header, packet]);
  page.writeUInt32LE(oggCrc(page), 22);
  return page;
}

/**
 * An Ogg Opus file (RFC 7845): OpusHead and OpusTags pages, then one packet a page, each page's
 * granule position the samples decoded by its end. No pre-skip: the packets join a stream
 * whose start was elsewhere.
 */
export function oggOpus(packets: Buffer[], channels = 2, serial = 0x0ea5e): Buffer {
  const head = Buffer.alloc(19);
  head.write("OpusHead", 0, "latin1");
  head[8] = 1;
  head[9] = channels;
  head.writeUInt16LE(0, 10);
  head.writeUInt32LE(48_000, 12);
  const vendor = Buffer.from("onair-test", "latin1");
  const tags = Buffer.alloc(8 + 4 + vendor.length + 4);
  tags.write("OpusTags", 0, "latin1");
  tags.writeUInt32LE(vendor.length, 8);
  vendor.copy(tags, 12);
  const pages = [oggPage(head, 0n, 0, 0x02, serial), oggPage(tags, 0n, 1, 0, serial)];
  let granule = 0n;
  packets.forEach((p, i) => {
    granule += BigInt(opusPacketSamples(p));
    pages.push(oggPage(p, granule, i + 2, i === packets.length - 1 ? 0x04 : 0, serial));
  });
  return Buffer.concat(pages);
}

// ---- decoding with ffmpeg ----

export interface DecodedFrame {
  width: number;
  height: number;
  pictType: string;
}

/** ffprobe decodes an Annex B H.264 stream: its frames, and whatever it reported as errors. */
export async function decodeH264(stream: Buffer): Promise<{ frames: DecodedFrame[]; errors: string }> {
  const dir = tempDir("onair-whep-");
  const file = path.join(dir, "received.h264");
  fs.writeFileSync(file, stream);
  try {
    const { out, err, code } = await runProcess(FFPROBE, [
      "-v", "error", "-f", "h264", "-count_frames", "-show_frames",
      "-show_entries", "frame=width,height,pict_type", "-of", "json", file,
    ]);
    if (code !== 0) return { frames: [], errors: `ffprobe exited ${code}: ${err}` };
    const json = JSON.parse(out) as { frames?: { width: number; height: number; pict_type: string }[] };
    return { frames: (json.frames ?? []).map((f) => ({ width: f.width, height: f.height, pictType: f.pict_type })), errors: err };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** ffmpeg decodes the Opus packets (in an Ogg file): what it reported as errors, if anything. */
export async function decodeOpus(packets: Buffer[]): Promise<{ errors: string }> {
  const dir = tempDir("onair-whep-");
  const file = path.join(dir, "received.opus");
  fs.writeFileSync(file, oggOpus(packets));
  try {
    const { err, code } = await runProcess(FFMPEG, ["-hide_banner", "-nostdin", "-v", "error", "-i", file, "-f", "null", "-"]);
    return { errors: code === 0 ? err : `ffmpeg exited ${code}: ${err}` };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

