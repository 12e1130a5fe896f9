import { Audio, PeerConnection, Video } from "node-datachannel";
import { createLogger } from "../../../src/log";
import { RealtimeFeeds } from "../../../src/realtime/feeds";
import { WhepPlayback, WhepRefusal } from "../../../src/realtime/playback";
import type { Rendition } from "../../../src/shapes";

// WhepPlayback with real node-datachannel peers on loopback, on a feed made playable by one
// hand-made FLV keyframe (FLV 10.1, ISO/IEC 14496-15 configuration record).

const log = createLogger("silent");
const renditions = [{ index: 0, name: "360p", encode: { width: 640, height: 360, bitrate: 600_000, fps: 30, gopFrames: 30 } }] as unknown as Rendition[];

const u24 = (n: number) => [(n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
const u32 = (n: number) => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
function tag(body: Buffer, ms: number): Buffer {
  return Buffer.from([9, ...u24(body.length), ...u24(ms), 0, 0, 0, 0, ...body, ...u32(11 + body.length)]);
}
const SPS = [0x67, 0x42, 0xc0, 0x1e];
const PPS = [0x68, 0xce];
const config = Buffer.from([0x17, 0, 0, 0, 0, 1, 0x42, 0xc0, 0x1e, 0xff, 0xe1, 0, SPS.length, ...SPS, 1, 0, PPS.length, ...PPS]);
const idr = Buffer.from([0x17, 1, 0, 0, 0, ...u32(3), 0x65, 0x88, 0x84]);
const flv = Buffer.concat([Buffer.from([0x46, 0x4c, 0x56, 1, 1, 0, 0, 0, 9, 0, 0, 0, 0]), tag(config, 0), tag(idr, 0)]);

async function offer(): Promise<{ pc: PeerConnection; sdp: string }> {
  const pc = new PeerConnection("offerer", { iceServers: [], bindAddress: "127.0.0.1" });
  const v = new Video("0", "RecvOnly");
  v.addH264Codec(96);
  const a = new Audio("1", "RecvOnly");
  a.addOpusCodec(111);
  pc.addTrack(v);
  pc.addTrack(a);
  pc.setLocalDescription();
  const deadline = Date.now() + 5000;
  while (pc.gatheringState() !== "complete" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  return { pc, sdp: pc.localDescription()!.sdp };
}

const PENDING = 3;

describe("WhepPlayback", () => {
  const feeds = new RealtimeFeeds(log);
  const peers: PeerConnection[] = [];
  let whep: WhepPlayback;
  afterEach(() => {
    whep?.close();
    peers.splice(0).forEach((p) => p.close());
  });
  afterAll(() => feeds.close());

  function playable(playbackId: string) {
    const feed = feeds.open(playbackId, renditions);
    feed.startRun(false).video(0, flv);
    expect(feed.playable).toBe(true);
    return feed;
  }

  it("keeps a stream's viewers within its cap when offers come together", async () => {
    playable("aaaaaaaaaaaaaaaa");
    whep = new WhepPlayback({ feeds, settings: { rtc: { iceServers: [], bindAddress: "127.0.0.1" }, publicIp: undefined, startBitrate: 1_000_000 }, maxViewers: 100, maxViewersPerStream: 2, pendingPerClient: 10, log });
    const offers = await Promise.all([1, 2, 3, 4, 5].map(() => offer()));
    peers.push(...offers.map((o) => o.pc));
    const results = await Promise.allSettled(offers.map((o) => whep.play("aaaaaaaaaaaaaaaa", () => o.sdp)));
    expect(results.filter((r) => r.status === "fulfilled").length).toBeLessThanOrEqual(2);
  });

  it("caps one client's offers that have not connected, not another's nor those passed on", async () => {
    playable("cccccccccccccccc");
    whep = new WhepPlayback({ feeds, settings: { rtc: { iceServers: [], bindAddress: "127.0.0.1" }, publicIp: undefined, startBitrate: 1_000_000 }, maxViewers: 100, maxViewersPerStream: 100, pendingPerClient: PENDING, log });
    const o = await offer();
    peers.push(o.pc);
    // The same offer each time: its answers are never applied, so no viewer ever connects.
    for (let i = 0; i < PENDING; i++) await whep.play("cccccccccccccccc", () => o.sdp, "192.0.2.1");
    const refused = await whep.play("cccccccccccccccc", () => o.sdp, "192.0.2.1").catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(WhepRefusal);
    expect(refused).toMatchObject({ status: 429, retryAfterSeconds: expect.any(Number) });
    await expect(whep.play("cccccccccccccccc", () => o.sdp, "192.0.2.2")).resolves.toMatchObject({ id: expect.any(String) });
    await expect(whep.play("cccccccccccccccc", () => o.sdp)).resolves.toMatchObject({ id: expect.any(String) });
    expect(whep.size).toBe(PENDING + 2);
  });

  it("stops counting a viewer against its address once it connects", async () => {
    playable("dddddddddddddddd");
    whep = new WhepPlayback({ feeds, settings: { rtc: { iceServers: [], bindAddress: "127.0.0.1" }, publicIp: undefined, startBitrate: 1_000_000 }, maxViewers: 100, maxViewersPerStream: 100, pendingPerClient: 1, log });
    const o = await offer();
    peers.push(o.pc);
    const { id, answer } = await whep.play("dddddddddddddddd", () => o.sdp, "192.0.2.9");
    expect(() => whep.checkPending("192.0.2.9")).toThrow(WhepRefusal);
    whep.answered(id);
    o.pc.setRemoteDescription(answer, "answer");
    const admits = () => {
      try {
        whep.checkPending("192.0.2.9");
        return true;
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + 15_000;
    while (!admits() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(admits()).toBe(true);
    expect(whep.size).toBe(1);
  }, 20_000);

  it("gives a viewer's place back when its answer never reached the player", async () => {
    playable("bbbbbbbbbbbbbbbb");
    whep = new WhepPlayback({ feeds, settings: { rtc: { iceServers: [], bindAddress: "127.0.0.1" }, publicIp: undefined, startBitrate: 1_000_000 }, maxViewers: 100, maxViewersPerStream: 100, pendingPerClient: PENDING, log });
    const o = await offer();
    peers.push(o.pc);
    // The POST's client went away before the 201 was sent: its response never emits "finish",
    // so the route never calls answered().
    await whep.play("bbbbbbbbbbbbbbbb", () => o.sdp);
    o.pc.close();
    expect(whep.size).toBe(1);
    await new Promise((r) => setTimeout(r, 20_000));
    expect(whep.size).toBe(0);
  }, 30_000);
});
