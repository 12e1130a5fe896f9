import { spawn, type ChildProcess } from "node:child_process";
import dgram from "node:dgram";
import { PeerConnection, Audio, Video, initLogger, type Track } from "node-datachannel";
if (process.env.WHIP_DEBUG) initLogger("Debug", (level, msg) => { if (!msg.match(/RTP|SRTP|Sending|Received/)) process.stderr.write(`[ndc ${level}] ${msg}\n`); });
import { FFMPEG } from "./media";
import { isRtcp } from "../../src/webrtc";

// An OBS-like WHIP publisher: libdatachannel (node-datachannel, the library OBS's WHIP output
// embeds) sending H.264 and Opus that ffmpeg encodes from its test sources. ICE host
// candidates on loopback only: tests send nothing outside 127.0.0.0/8.

const VIDEO_SSRC = 0x1111;
const AUDIO_SSRC = 0x2222;

export interface WhipClient {
  status: number;
  /** The 201's Location, resolved against the endpoint. */
  resource: string | undefined;
  headers: Headers;
  /** The error body of a refusal. */
  body: string;
  /** The POST's round trip (offer sent → answer read), ms. */
  answerMs: number;
  /** Stops sending and ends the resource with DELETE (its status). */
  stop(): Promise<number>;
  /** Stops sending without a DELETE: the peer just goes away. */
  vanish(): void;
  /** RTP packets sent so far. */
  sent(): number;
}

export interface WhipPublishOptions {
  /** Bearer stream key (POST /whip), or undefined when the key is in the URL. */
  bearer?: string;
  seconds?: number;
  size?: string;
}

/**
 * libdatachannel as a client had its peer closed between gathering and the answer when the
 * server's connectivity checks reached it before it had applied the answer (the server now
 * waits for the client's checks first), and rarely sees ICE fail on loopback before its tracks
 * open: like OBS, which retries a failed start, the client ends the resource it got and
 * publishes again.
 */
export async function whipPublish(endpoint: string, opts: WhipPublishOptions = {}): Promise<WhipClient> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await whipPublishOnce(endpoint, opts);
    } catch (err) {
      if (!(err instanceof FailedStart) || attempt === 3) throw err;
      if (err.resource) await fetch(err.resource, { method: "DELETE" });
      await new Promise((r) => setTimeout(r, 300 * attempt));
    }
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

async function whipPublishOnce(endpoint: string, opts: WhipPublishOptions): Promise<WhipClient> {
  const pc = new PeerConnection("whip-test-client", { iceServers: [], bindAddress: "127.0.0.1" });
  const video = new Video("0", "SendOnly");
  video.addH264Codec(96);
  video.addSSRC(VIDEO_SSRC, "onair-test", "stream", "video");
  const audio = new Audio("1", "SendOnly");
  audio.addOpusCodec(111);
  audio.addSSRC(AUDIO_SSRC, "onair-test", "stream", "audio");
  const tracks: Track[] = [pc.addTrack(video), pc.addTrack(audio)];
  const states: string[] = [];
  pc.onStateChange((state) => states.push(state));
  pc.onGatheringStateChange((state) => states.push(`gathering ${state}`));
  pc.setLocalDescription();
  await until(() => pc.gatheringState() === "complete", 5000);
  const posted = performance.now();
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/sdp", ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}) },
    body: pc.localDescription()!.sdp,
  });
  const body = await res.text();
  const answerMs = performance.now() - posted;
  const location = res.headers.get("location");
  const resource = location ? new URL(location, endpoint).toString() : undefined;
  if (res.status !== 201) {
    pc.close();
    return { status: res.status, resource, headers: res.headers, body, answerMs, stop: async () => 0, vanish: () => undefined, sent: () => 0 };
  }
  try {
    pc.setRemoteDescription(body, "answer");
  } catch (err) {
    // Closed under it, or libdatachannel's "Got a remote candidate without ICE transport" (its
    // ICE transport gone before the answer came): a failed start, begun again.
    const why = `${(err as Error).message} (client states: ${states.join(", ")}; now ${pc.state()} / ${pc.iceState()})`;
    pc.close();
    throw new FailedStart(why, resource);
  }
  const ended = () => pc.state() === "failed" || pc.state() === "closed";
  // ICE and DTLS on loopback take milliseconds; a lost DTLS flight is resent after 1, 2, 4… s,
  // which a loaded 2-core CI machine has needed: 20 s bounds the wait, not the speed.
  await until(() => tracks.every((t) => t.isOpen()) || ended(), 20_000, () => `tracks open (client states: ${states.join(", ")}; now ${pc.state()} / ${pc.iceState()})`);
  if (ended()) {
    // The same start failure seen from the other side (ICE failed on loopback, about one run in
    // a few hundred publishes): started again, as OBS does.
    const why = `the peer ${pc.state()} before its tracks opened (client states: ${states.join(", ")})`;
    pc.close();
    throw new FailedStart(why, resource);
  }

  // ffmpeg's encoders → RTP on loopback → the tracks.
  const sockets = await Promise.all([0, 1].map(() => bindUdp()));
  let sent = 0;
  sockets.forEach((s, i) =>
    s.on("message", (packet) => {
      if (isRtcp(packet)) return; // ffmpeg's own reports
      if (tracks[i]!.isOpen() && tracks[i]!.sendMessageBinary(packet)) sent++;
    }),
  );
  const [vport, aport] = sockets.map((s) => s.address().port);
  const ffmpeg: ChildProcess = spawn(
    FFMPEG,
    [
      "-hide_banner", "-nostdin", "-loglevel", "error",
      "-re", "-f", "lavfi", "-i", `testsrc2=size=${opts.size ?? "640x360"}:rate=30`,
      "-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
      "-t", String(opts.seconds ?? 30),
      "-map", "0:v", "-c:v", "libx264", "-profile:v", "baseline", "-preset", "ultrafast", "-tune", "zerolatency",
      "-g", "30", "-pix_fmt", "yuv420p", "-b:v", "1000k", "-bsf:v", "h264_mp4toannexb",
      "-payload_type", "96", "-ssrc", String(VIDEO_SSRC), "-f", "rtp", `rtp://127.0.0.1:${vport}?pkt_size=1200`,
      "-map", "1:a", "-c:a", "libopus", "-b:a", "64k", "-ar", "48000", "-ac", "2",
      "-payload_type", "111", "-ssrc", String(AUDIO_SSRC), "-f", "rtp", `rtp://127.0.0.1:${aport}?pkt_size=1200`,
    ],
    { stdio: ["ignore", "ignore", "ignore"] },
  );
  let stopped = false;
  const halt = () => {
    if (stopped) return;
    stopped = true;
    ffmpeg.kill("SIGKILL");
    for (const s of sockets) s.close();
    pc.close();
  };
  return {
    status: res.status,
    resource,
    headers: res.headers,
    body,
    answerMs,
    sent: () => sent,
    vanish: halt,
    stop: async () => {
      // DELETE first, as OBS does: a peer closed first ends the publish on its own, and the
      // DELETE that follows finds no resource.
      const status = (await fetch(resource!, { method: "DELETE" })).status;
      halt();
      return status;
    },
  };
}

function bindUdp(): Promise<dgram.Socket> {
  return new Promise((resolve) => {
    const s = dgram.createSocket("udp4");
    s.bind(0, "127.0.0.1", () => resolve(s));
  });
}

async function until(check: () => boolean, timeoutMs: number, what: () => string = () => "the peer"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`WHIP client: timed out after ${timeoutMs} ms waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
