// Viewers for `npm run bench:viewers`, in a process of their own (the bench starts a few) so that
// receiving does not compete with the bench's own sampling, and so that one Node event loop is
// not what limits the count. Light on purpose: a WHEP viewer counts packets, bytes, frames and
// sequence gaps and never keeps a payload; an LL-HLS viewer follows the live edge part by part
// with blocking playlist reloads and throws the bodies away.
//
// Commands on stdin, one JSON object a line; one JSON answer a line on stdout:
//   {"op":"whep","url":…,"count":n}            → {"op":"started","started":n,"failed":[…]}
//   {"op":"hls","url":…,"count":n,"first":i}   → {"op":"started",…}   (i: the first viewer's
//                                                 number, which picks its 127.x.y.z source address)
//   {"op":"sample"}                            → {"op":"sample","viewers":[…]} (cumulative counters)
//   {"op":"resources"}                         → {"op":"resources","framesSent":…,"framesDropped":…,…}
//   {"op":"stop"}                              → {"op":"stopped"}: every viewer ended (WHEP: DELETE)

import http from "node:http";
import readline from "node:readline";
import { Audio, PeerConnection, RtcpReceivingSession, Video, type Track } from "node-datachannel";
import { readRtp } from "../src/webrtc";

/** What a viewer has counted since it started. */
export interface ViewerCounters {
  /** Video frames received (distinct RTP timestamps; for HLS, seconds of parts received × fps). */
  videoFrames: number;
  /** Seconds of media received: HLS parts' durations; WHEP, how far the video's RTP timestamps went. */
  mediaSeconds: number;
  packets: number;
  bytes: number;
  /** Packets missing from the sequence (RTP), or failed requests (HLS). */
  lost: number;
  expected: number;
  /** HLS: parts the newest playlist listed past the one just fetched (0 or 1 at the live edge). */
  behindParts: number;
}

interface Viewer {
  /** WHEP: the viewer's resource (GET tells how the server serves it, DELETE ends it). */
  resource?: string;
  counters(): ViewerCounters;
  stop(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// RTP counting (RFC 3550 A.1): sequence numbers extended past their 16-bit wrap

/** Packets, bytes and losses of one received RTP stream; frames are runs of one timestamp. */
export class RtpCount {
  packets = 0;
  bytes = 0;
  frames = 0;
  /** RTP clock ticks from the first packet's timestamp to the newest (forward only). */
  ticks = 0;
  private first: number | undefined;
  private firstTimestamp = 0;
  private highest = 0;
  private highestSeq = 0;
  private lastTimestamp: number | undefined;

  add(packet: Buffer): void {
    const rtp = readRtp(packet);
    if (!rtp) return;
    this.packets++;
    this.bytes += packet.length;
    if (rtp.timestamp !== this.lastTimestamp) {
      this.frames++;
      this.lastTimestamp = rtp.timestamp;
    }
    if (this.first === undefined) {
      this.firstTimestamp = rtp.timestamp;
      this.first = this.highest = rtp.sequence;
      this.highestSeq = rtp.sequence;
      return;
    }
    const delta = ((rtp.sequence - this.highestSeq + 0x8000) & 0xffff) - 0x8000;
    if (delta > 0) {
      this.highest += delta;
      this.highestSeq = rtp.sequence;
      // Unsigned 32-bit distance: a 90 kHz clock wraps only after 13 hours.
      this.ticks = Math.max(this.ticks, (rtp.timestamp - this.firstTimestamp) >>> 0);
    }
  }

  /** Packets the sequence numbers say were sent (late ones count as received, duplicates too). */
  get expected(): number {
    return this.first === undefined ? 0 : this.highest - this.first + 1;
  }

  get lost(): number {
    return Math.max(0, this.expected - this.packets);
  }
}

// ---------------------------------------------------------------------------------------------
// WHEP

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

/** A recvonly H.264 + Opus peer on loopback, answering with RTCP as a browser does (receiver reports). */
async function whepViewer(url: string): Promise<Viewer> {
  const pc = new PeerConnection("bench-viewer", { iceServers: [], bindAddress: "127.0.0.1" });
  const video = new Video("0", "RecvOnly");
  video.addH264Codec(96);
  const audio = new Audio("1", "RecvOnly");
  audio.addOpusCodec(111);
  const tracks: Track[] = [pc.addTrack(video), pc.addTrack(audio)];
  const counts = [new RtpCount(), new RtpCount()];
  tracks.forEach((track, i) => {
    track.setMediaHandler(new RtcpReceivingSession());
    track.onMessage((packet) => counts[i]!.add(packet));
  });
  let resource: string | undefined;
  const fail = async (why: string): Promise<never> => {
    if (resource) await fetch(resource, { method: "DELETE" }).catch(() => undefined);
    pc.close();
    throw new Error(why);
  };
  pc.setLocalDescription();
  if (!(await until(() => pc.gatheringState() === "complete", 5000))) await fail("ICE gathering did not complete in 5 s");
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/sdp" }, body: pc.localDescription()!.sdp });
  const answer = await res.text();
  const location = res.headers.get("location");
  resource = location ? new URL(location, url).toString() : undefined;
  if (res.status !== 201) await fail(`POST answered ${res.status}: ${answer.slice(0, 200)}`);
  pc.setRemoteDescription(answer, "answer");
  const ended = () => pc.state() === "failed" || pc.state() === "closed";
  await until(() => tracks.every((t) => t.isOpen()) || ended(), 20_000);
  if (!tracks.every((t) => t.isOpen())) await fail(`tracks not open (peer ${pc.state()})`);
  const [v, a] = counts as [RtpCount, RtpCount];
  return {
    resource,
    counters: () => ({
      videoFrames: v.frames,
      mediaSeconds: v.ticks / 90_000,
      packets: v.packets + a.packets,
      bytes: v.bytes + a.bytes,
      lost: v.lost + a.lost,
      expected: v.expected + a.expected,
      behindParts: 0,
    }),
    stop: async () => {
      await fetch(resource!, { method: "DELETE" }).catch(() => undefined);
      pc.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// LL-HLS

export interface ListedPart {
  msn: number;
  part: number;
  uri: string;
  duration: number;
}

/**
 * The parts a media playlist lists, each with its segment's media sequence number and its index
 * in it: parts come before their segment's EXTINF line, those of the open segment after the last.
 */
export function listedParts(playlist: string): ListedPart[] {
  let msn = Number(/#EXT-X-MEDIA-SEQUENCE:(\d+)/.exec(playlist)?.[1] ?? 0);
  let part = 0;
  const parts: ListedPart[] = [];
  for (const line of playlist.split("\n")) {
    if (line.startsWith("#EXT-X-PART:")) {
      const uri = /URI="([^"]+)"/.exec(line)?.[1];
      const duration = Number(/DURATION=([\d.]+)/.exec(line)?.[1]);
      if (uri) parts.push({ msn, part: part++, uri, duration });
    } else if (line.startsWith("#EXTINF:")) {
      msn++;
      part = 0;
    }
  }
  return parts;
}

const after = (p: ListedPart, last: { msn: number; part: number }) => p.msn > last.msn || (p.msn === last.msn && p.part > last.part);

/** GET with this viewer's connection; the body counted and dropped (or kept, for playlists). */
function get(agent: http.Agent, url: string, keep: boolean): Promise<{ status: number; bytes: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent }, (res) => {
      let bytes = 0;
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => {
        bytes += c.length;
        if (keep) chunks.push(c);
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes, text: keep ? Buffer.concat(chunks).toString("utf8") : "" }));
      res.on("error", reject);
    });
    req.setTimeout(15_000, () => req.destroy(new Error("no answer in 15 s")));
    req.on("error", reject);
  });
}

/**
 * A player at the live edge of one rendition: the next part by blocking reload
 * (`_HLS_msn`/`_HLS_part`), then every part past the last one fetched, in order. Its own
 * source address on 127/8 (`address`), as distinct players would have.
 */
function hlsViewer(mediaUrl: string, address: string, fps: number): Viewer {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2, localAddress: address });
  const c: ViewerCounters = { videoFrames: 0, mediaSeconds: 0, packets: 0, bytes: 0, lost: 0, expected: 0, behindParts: 0 };
  let stopped = false;
  const loop = async () => {
    let last: { msn: number; part: number } | undefined;
    while (!stopped) {
      const u = new URL(mediaUrl);
      if (last) {
        u.searchParams.set("_HLS_msn", String(last.msn));
        u.searchParams.set("_HLS_part", String(last.part + 1));
      }
      c.expected++;
      const pl = await get(agent, u.toString(), true).catch(() => undefined);
      if (!pl || pl.status !== 200) {
        c.lost++;
        await sleep(200);
        continue;
      }
      const parts = listedParts(pl.text);
      // Joining: the newest part, as a low-latency player starts at the live edge.
      const due = last ? parts.filter((p) => after(p, last!)) : parts.slice(-1);
      for (const p of due) {
        if (stopped) break;
        c.expected++;
        const r = await get(agent, new URL(p.uri, u).toString(), false).catch(() => undefined);
        if (!r || r.status !== 200) c.lost++;
        else {
          c.packets++;
          c.bytes += r.bytes;
          c.mediaSeconds += p.duration;
          c.videoFrames += p.duration * fps;
        }
        last = p;
      }
      const newest = parts.at(-1);
      c.behindParts = newest && last ? parts.filter((p) => after(p, last!)).length : 0;
    }
  };
  const running = loop();
  return {
    counters: () => ({ ...c }),
    stop: async () => {
      stopped = true;
      agent.destroy();
      await running.catch(() => undefined);
    },
  };
}

/** 127.0.0.2 onwards, 250 to a /24: distinct players, each under the per-client caps. */
const sourceAddress = (n: number) => `127.0.${1 + Math.floor(n / 250)}.${2 + (n % 250)}`;

// ---------------------------------------------------------------------------------------------
// Commands

interface Command {
  op: "whep" | "hls" | "sample" | "resources" | "stop";
  url?: string;
  count?: number;
  first?: number;
  fps?: number;
}

let viewers: Viewer[] = [];
let whep = false;
const say = (o: object): void => void process.stdout.write(JSON.stringify(o) + "\n");

/** Starts `count` viewers, `concurrency` at a time: a storm of offers would measure the start, not the steady state. */
async function start(count: number, make: (i: number) => Promise<Viewer>, concurrency: number): Promise<string[]> {
  const failed: string[] = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      try {
        viewers.push(await make(i));
      } catch (err) {
        failed.push((err as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return failed;
}

/** Sums of what the viewers' WHEP resources say (GET on each). */
async function resources(): Promise<object> {
  const sums = { framesSent: 0, framesDropped: 0, switches: 0, answered: 0, renditions: {} as Record<string, number> };
  for (const v of viewers) {
    const url = v.resource;
    const r = url ? await fetch(url).catch(() => undefined) : undefined;
    if (!r || r.status !== 200) continue;
    const s = (await r.json()) as { framesSent: number; framesDropped?: number; switches: number; rendition: { name: string } | null };
    sums.answered++;
    sums.framesSent += s.framesSent;
    sums.framesDropped += s.framesDropped ?? 0;
    sums.switches += s.switches;
    const name = s.rendition?.name ?? "none";
    sums.renditions[name] = (sums.renditions[name] ?? 0) + 1;
  }
  return sums;
}

async function run(cmd: Command): Promise<void> {
  if (cmd.op === "whep") {
    whep = true;
    const failed = await start(cmd.count!, () => whepViewer(cmd.url!), 4);
    return say({ op: "started", started: viewers.length, failed });
  }
  if (cmd.op === "hls") {
    whep = false;
    const failed = await start(cmd.count!, async (i) => hlsViewer(cmd.url!, sourceAddress(cmd.first! + i), cmd.fps ?? 30), 16);
    return say({ op: "started", started: viewers.length, failed });
  }
  if (cmd.op === "sample") return say({ op: "sample", viewers: viewers.map((v) => v.counters()) });
  if (cmd.op === "resources") return say({ op: "resources", ...(whep ? await resources() : {}) });
  await Promise.all(viewers.map((v) => v.stop()));
  viewers = [];
  say({ op: "stopped" });
}

// One command at a time, in order: the bench waits for each answer before the next.
let queue = Promise.resolve();
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  queue = queue.then(() => run(JSON.parse(line) as Command)).catch((err: unknown) => say({ op: "error", message: String(err) }));
});
process.stdin.on("end", () => void queue.then(() => Promise.all(viewers.map((v) => v.stop()))).then(() => process.exit(0)));
