import { createLogger } from "../../../src/log";
import { LiveFeed, type VideoFrame } from "../../../src/realtime/feed";
import { WhepViewer } from "../../../src/realtime/viewer";
import type { RestrictedOffer } from "../../../src/webrtc";
import type { Rendition } from "../../../src/shapes";

// The viewer's frame choice (startsHere) on a two-rung ladder whose pipes deliver frames in the
// order a real ladder's do: a faster, smaller encoder's frames can come before a slower one's of
// the same instant. The sending track is a stand-in that records what reaches libdatachannel.

const log = createLogger("silent");
const renditions = [
  { index: 0, name: "720p", encode: { width: 1280, height: 720, bitrate: 3_000_000, fps: 30, gopFrames: 60 } },
  { index: 1, name: "360p", encode: { width: 640, height: 360, bitrate: 600_000, fps: 30, gopFrames: 60 } },
] as unknown as Rendition[];
const offer: RestrictedOffer = { sdp: "", candidates: [], video: { mid: "0", payloadType: 96, fmtp: undefined }, audio: undefined } as unknown as RestrictedOffer;

function viewerOnLowestRung() {
  const feed = new LiveFeed("p", renditions, undefined, log);
  // 1 Mb/s: the start choice is the 360p rung (index 1).
  const v = new WhepViewer("id", feed, offer, { rtc: { iceServers: [] }, publicIp: undefined, startBitrate: 1_000_000 }, log);
  const sent: { rendition: number; ts: number; key: boolean }[] = [];
  let current: VideoFrame | undefined;
  const track = { isOpen: () => true, sendMessageBinary: () => (sent.push({ rendition: current!.rendition, ts: current!.timestamp, key: current!.keyframe }), true) };
  Object.assign(v, { videoSender: { track, config: { timestamp: 0 }, base: 0, ssrc: VIDEO_SSRC } });
  feed.listen(v);
  const push = (rendition: number, ts: number, keyframe = false) => {
    current = { rendition, timestamp: ts, keyframe, data: Buffer.alloc(1) };
    feed.emitVideo(current, ts / 90_000, false);
  };
  return { v, feed, sent, push, target: (bps: number) => Object.assign(v, { target: (v as unknown as { choose(n: number): number }).choose(bps) }) };
}

const VIDEO_SSRC = 0x5678;
const GOP = 180_000; // 2 s at 90 kHz
const FRAME = 3000;

describe("WhepViewer switching", () => {
  it("never sends a rendition's P-frames after holding back the keyframe they depend on", () => {
    const { sent, push, target } = viewerOnLowestRung();
    push(1, 0, true);
    push(1, FRAME);
    target(10_000_000); // the player's REMB asks for 720p
    // The next GOP: 360p (fast encoder) delivers its keyframe and a P-frame before 720p's keyframe.
    push(1, GOP, true);
    push(1, GOP + FRAME);
    push(0, GOP, true);
    push(0, GOP + FRAME);
    const after = sent.filter((f) => f.ts >= GOP);
    // Either the switch happened at GOP, or 360p went on from its own keyframe: never a P-frame
    // of 360p without its keyframe.
    const orphan = after.find((f) => f.rendition === 1 && !f.key && !after.some((k) => k.rendition === 1 && k.key));
    expect(orphan).toBeUndefined();
  });

  it("switches up when the target's keyframe of the same instant comes after the current rung's next frame", () => {
    const { v, push, target } = viewerOnLowestRung();
    push(1, 0, true);
    target(10_000_000);
    for (let gop = 1; gop <= 3; gop++) {
      push(1, gop * GOP, true);
      push(1, gop * GOP + FRAME);
      push(0, gop * GOP, true);
      push(0, gop * GOP + FRAME);
    }
    expect(v.status().switches).toBe(1);
  });
});

/** A receiver report (RFC 3550 6.4.2) with a block per [source, fraction lost (0-1)]. */
function receiverReport(...blocks: [number, number][]): Buffer {
  const rr = Buffer.alloc(8 + 24 * blocks.length);
  rr[0] = 0x80 | blocks.length; // V=2
  rr[1] = 201;
  rr.writeUInt16BE(rr.length / 4 - 1, 2);
  rr.writeUInt32BE(0x1234, 4);
  blocks.forEach(([ssrc, fraction], i) => {
    rr.writeUInt32BE(ssrc, 8 + 24 * i);
    rr[12 + 24 * i] = Math.round(fraction * 256);
  });
  return rr;
}

describe("WhepViewer feedback and lost renditions", () => {
  const feedback = (v: WhepViewer, packet: Buffer) => (v as unknown as { feedback(p: Buffer): void }).feedback(packet);

  it("steps down when receiver reports show heavy loss, though no REMB said so", () => {
    const { v, push, target, sent } = viewerOnLowestRung();
    push(1, 0, true);
    target(10_000_000);
    push(0, GOP, true);
    expect(v.status().rendition?.index).toBe(0);
    expect(v.status().lossLimitedBitrate).toBeNull();
    feedback(v, receiverReport([VIDEO_SSRC, 0.25]));
    // 3 Mb/s sent (no audio offered), cut by 12.5 %: under what 720p needs with its headroom.
    expect(v.status().lossLimitedBitrate).toBe(3_000_000 * 0.875);
    push(0, 2 * GOP, true);
    push(1, 2 * GOP, true);
    expect(sent.at(-1)).toEqual({ rendition: 1, ts: 2 * GOP, key: true });
    expect(v.status().switches).toBe(2);
  });

  it("reads the video's own loss, not the audio's in the same report, and steps at most every 300 ms", () => {
    const { v, push, target } = viewerOnLowestRung();
    push(1, 0, true);
    target(10_000_000);
    push(0, GOP, true);
    feedback(v, receiverReport([0xaaaa, 0.5], [VIDEO_SSRC, 0]));
    expect(v.status().lossLimitedBitrate).toBeNull();
    feedback(v, receiverReport([VIDEO_SSRC, 0.5]));
    const once = v.status().lossLimitedBitrate;
    expect(once).toBe(3_000_000 * 0.75);
    // A report that comes with the next NACK, milliseconds later, does not cut again.
    feedback(v, receiverReport([VIDEO_SSRC, 0.5]));
    expect(v.status().lossLimitedBitrate).toBe(once);
  });

  it("never cuts under the lowest rung's rate however long the loss", () => {
    const { v, push, target } = viewerOnLowestRung();
    push(1, 0, true);
    target(10_000_000);
    push(0, GOP, true);
    for (let i = 0; i < 30; i++) {
      Object.assign(v, { lossSteppedAt: -Infinity });
      feedback(v, receiverReport([VIDEO_SSRC, 0.5]));
    }
    expect(v.status().lossLimitedBitrate).toBe(600_000);
  });

  it("keeps a held keyframe's P-frames back when the rendition it waits for is lost", () => {
    const { feed, sent, push, target } = viewerOnLowestRung();
    push(1, 0, true);
    target(10_000_000);
    push(1, GOP, true); // held: the switch to 720p waits for its keyframe
    feed.loseRendition(0);
    push(1, GOP + FRAME);
    expect(sent.filter((f) => f.ts >= GOP)).toEqual([]);
    push(1, 2 * GOP, true);
    expect(sent.at(-1)).toEqual({ rendition: 1, ts: 2 * GOP, key: true });
  });

  it("moves its viewers to another rendition at its keyframe when one cannot be read", () => {
    const { v, feed, push, sent } = viewerOnLowestRung();
    push(1, 0, true);
    push(0, 0, true);
    feed.loseRendition(1);
    expect(v.isEnded).toBe(false);
    push(1, FRAME);
    push(0, GOP, true);
    expect(sent.map((f) => f.rendition)).toEqual([1, 0]);
    expect(v.status().rendition?.index).toBe(0);
  });

  it("ends when no rendition is left to send, and the feed is no longer playable", () => {
    const { v, feed, push } = viewerOnLowestRung();
    push(1, 0, true);
    push(0, 0, true);
    feed.loseRendition(1);
    expect(feed.playable).toBe(true);
    feed.loseRendition(0);
    expect(v.isEnded).toBe(true);
    expect(feed.playable).toBe(false);
  });

  it("loses a rendition whose pipe brings what is not FLV, and has it again on the next run", () => {
    const feed = new LiveFeed("p", renditions, undefined, log);
    const lost: number[] = [];
    feed.listen({ video: () => undefined, audio: () => undefined, feedEnded: () => undefined, renditionLost: (i) => lost.push(i) });
    feed.startRun(false).video(1, Buffer.from("this is not an FLV stream at all"));
    expect(lost).toEqual([1]);
    expect(feed.isLost(1)).toBe(true);
    feed.startRun(false);
    expect(feed.isLost(1)).toBe(false);
  });
});

describe("LiveFeed listeners", () => {
  it("tells a listener that joins after the end that the feed ended", () => {
    const feed = new LiveFeed("p", renditions, undefined, log);
    feed.end();
    let told = false;
    feed.listen({ video: () => undefined, audio: () => undefined, feedEnded: () => (told = true) });
    expect(told || feed.viewers === 0).toBe(true);
  });
});
