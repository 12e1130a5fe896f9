import pino from "pino";
import { LiveFeed, OPUS_LINGER_MS, type AudioFrame, type FeedListener, type OpusSink, type StartOpus, type VideoFrame } from "../../../src/realtime";
import type { AudioRoutes } from "../../../src/realtime/feed";
import { isAacConfig } from "../../../src/realtime/sourceFrames";
import { encodeFlvTag, flvHeader, FlvReader, FlvTagType } from "../../../src/rtmp";
import type { RtpPacket } from "../../../src/webrtc";

// A source packaged as sent, played over WebRTC: its FLV goes to the feed as it is; its frames
// keep the publisher's clock from the run's zero, and its audio goes to an Opus encoder that
// runs only while someone watches, its packets stamped from the first audio tag it was given.

const log = pino({ level: "silent" });
const SOURCE = [{ index: 0, name: "source", encode: null }];

// ISO/IEC 14496-15 5.3.3.1: one SPS, one PPS, 4-byte lengths.
const AVC_RECORD = Buffer.from([1, 0x42, 0xc0, 0x1e, 0xff, 0xe1, 0, 4, 0x67, 0x42, 0xc0, 0x1e, 1, 0, 2, 0x68, 0xce]);
const video = (timestamp: number, body: number[]) => encodeFlvTag({ type: FlvTagType.video, timestamp, data: Buffer.from(body) });
const videoConfig = (ts: number) => video(ts, [0x17, 0, 0, 0, 0, ...AVC_RECORD]);
/** A frame: FrameType 1 (key) or 2, AVC NALU, composition 0, one IDR or slice NAL unit behind a 4-byte length. */
const frame = (ts: number, key: boolean) => video(ts, [key ? 0x17 : 0x27, 1, 0, 0, 0, 0, 0, 0, 2, key ? 0x65 : 0x41, 0x88]);
const audio = (timestamp: number, body: number[]) => encodeFlvTag({ type: FlvTagType.audio, timestamp, data: Buffer.from(body) });
// SoundFormat 10 (AAC), 48 kHz stereo; AACPacketType 0 (AudioSpecificConfig) or 1 (a raw frame).
const aacConfig = (ts: number) => audio(ts, [0xaf, 0, 0x11, 0x90]);
const aacFrame = (ts: number) => audio(ts, [0xaf, 1, 0x21, ts & 0xff]);

class FakeSink implements OpusSink {
  running = true;
  readonly written: Buffer[] = [];
  write(flv: Buffer): void {
    this.written.push(flv);
  }
  stop(): void {
    this.running = false;
  }
  tags() {
    return new FlvReader().push(Buffer.concat(this.written));
  }
}

function setUp() {
  const routes = new Map<number, (p: RtpPacket) => void>();
  const audioRoutes: AudioRoutes = { port: 5004, route: (ssrc, to) => routes.set(ssrc, to), unroute: (ssrc) => routes.delete(ssrc) };
  const feed = new LiveFeed("pb", SOURCE, audioRoutes, log);
  const sinks: { sink: FakeSink; ssrc: number }[] = [];
  const start: StartOpus = (route) => {
    const sink = new FakeSink();
    sinks.push({ sink, ssrc: route.ssrc });
    return sink;
  };
  const frames: VideoFrame[] = [];
  const sounds: AudioFrame[] = [];
  const listener: FeedListener = { video: (f) => frames.push(f), audio: (f) => sounds.push(f), feedEnded: () => undefined };
  const rtp = (ssrc: number, timestamp: number) => routes.get(ssrc)?.({ ssrc, timestamp, sequence: 0, payloadType: 111, payload: Buffer.from([1]) });
  return { feed, routes, sinks, start, frames, sounds, listener, rtp };
}

afterEach(() => jest.useRealTimers());

describe("SourceFrames", () => {
  it("isAacConfig: an AudioSpecificConfig, not a frame or another codec", () => {
    expect(isAacConfig(Buffer.from([0xaf, 0]))).toBe(true);
    expect(isAacConfig(Buffer.from([0xaf, 1, 0x21]))).toBe(false);
    expect(isAacConfig(Buffer.from([0x2f, 0]))).toBe(false);
    expect(isAacConfig(Buffer.from([0xaf]))).toBe(false);
  });

  it("stamps the source's frames from the run's zero (its first tag), whatever the publisher's clock reads", () => {
    const s = setUp();
    const tap = s.feed.startSourceRun(undefined);
    s.feed.listen(s.listener);
    tap.write(Buffer.concat([flvHeader({ audio: true, video: true }), videoConfig(60_000), frame(60_000, true)]));
    tap.write(Buffer.concat([frame(60_033, false), frame(60_067, false)]));
    expect(s.frames.map((f) => [f.timestamp, f.keyframe])).toEqual([[0, true], [2970, false], [6030, false]]);
    // Nothing to encode: no encoder, no route.
    expect(s.sinks).toEqual([]);
    expect(s.routes.size).toBe(0);
  });

  it("takes the run's zero from the first picture or sound, not from the configurations a joining reader is handed first (stamped when they were sent)", () => {
    const s = setUp();
    const tap = s.feed.startSourceRun(undefined);
    s.feed.listen(s.listener);
    // As a reader joins an hour into the publish: the configurations from its start, then the newest group of pictures.
    tap.write(Buffer.concat([flvHeader({ audio: true, video: true }), videoConfig(0), aacConfig(0), frame(3_600_000, true), aacFrame(3_600_010), frame(3_600_033, false)]));
    expect(s.frames.map((f) => f.timestamp)).toEqual([0, 2970]);
  });

  it("lets the encoder go when B-frames end the viewers (it lingers, then stops)", () => {
    jest.useFakeTimers();
    const s = setUp();
    const tap = s.feed.startSourceRun(s.start);
    s.feed.listen(s.listener);
    expect(s.sinks.length).toBe(1);
    // A keyframe with a composition offset: WebRTC players cannot play it.
    const reordered = video(40, [0x17, 1, 0, 0, 66, 0, 0, 0, 2, 0x65, 0x88]);
    tap.write(Buffer.concat([flvHeader({ audio: true, video: true }), videoConfig(0), reordered]));
    expect(s.feed.viewers).toBe(0);
    jest.advanceTimersByTime(OPUS_LINGER_MS);
    expect(s.sinks[0]!.sink.running).toBe(false);
    expect(s.routes.size).toBe(0);
  });

  it("starts the encoder with the first viewer, gives it the configuration with the first frame, and stamps its packets from that frame's time", () => {
    const s = setUp();
    const tap = s.feed.startSourceRun(s.start);
    tap.write(Buffer.concat([flvHeader({ audio: true, video: true }), videoConfig(1000), aacConfig(1000), frame(1000, true), aacFrame(1000)]));
    expect(s.sinks).toEqual([]); // nobody watches
    s.feed.listen(s.listener);
    expect(s.sinks.length).toBe(1);
    const { sink, ssrc } = s.sinks[0]!;
    tap.write(Buffer.concat([aacFrame(1500), aacFrame(1521)]));
    expect(sink.tags().map((t) => [t.type, t.timestamp, isAacConfig(t.data)])).toEqual([
      [FlvTagType.audio, 1500, true],
      [FlvTagType.audio, 1500, false],
      [FlvTagType.audio, 1521, false],
    ]);
    // Its first packet is 0.5 s after the run's zero; the next one 960 samples on.
    s.rtp(ssrc, 4_294_967_000);
    s.rtp(ssrc, (4_294_967_000 + 960) >>> 0);
    expect(s.sounds.map((a) => a.timestamp)).toEqual([24_000, 24_960]);
  });

  it("stops the encoder OPUS_LINGER_MS after the last viewer leaves, keeps it for one who comes back in time, and starts another after", () => {
    jest.useFakeTimers();
    const s = setUp();
    s.feed.startSourceRun(s.start);
    const leave = s.feed.listen(s.listener);
    leave();
    jest.advanceTimersByTime(OPUS_LINGER_MS - 1);
    const leaveAgain = s.feed.listen(s.listener);
    jest.advanceTimersByTime(OPUS_LINGER_MS);
    expect(s.sinks.map((x) => x.sink.running)).toEqual([true]);
    leaveAgain();
    jest.advanceTimersByTime(OPUS_LINGER_MS);
    expect(s.sinks.map((x) => x.sink.running)).toEqual([false]);
    expect(s.routes.size).toBe(0);
    s.feed.listen(s.listener);
    expect(s.sinks.map((x) => x.sink.running)).toEqual([false, true]);
    expect(s.routes.size).toBe(1);
  });

  it("starts a new encoder for the next viewer when the running one stopped by itself", () => {
    const s = setUp();
    s.feed.startSourceRun(s.start);
    s.feed.listen(s.listener);
    s.sinks[0]!.sink.running = false; // fell behind, or failed
    s.feed.listen({ ...s.listener });
    expect(s.sinks.length).toBe(2);
    expect(s.routes.size).toBe(1);
  });

  it("starts another encoder for viewers still listening when the running one stopped, at most once per 5 s", () => {
    jest.useFakeTimers();
    const s = setUp();
    const tap = s.feed.startSourceRun(s.start);
    s.feed.listen(s.listener);
    tap.write(Buffer.concat([flvHeader({ audio: true, video: true }), aacConfig(0), aacFrame(0)]));
    s.sinks[0]!.sink.running = false; // it failed, or fell behind
    tap.write(aacFrame(21));
    expect(s.sinks.length).toBe(1);
    jest.advanceTimersByTime(5000);
    tap.write(aacFrame(42));
    expect(s.sinks.length).toBe(2);
    expect(s.routes.size).toBe(1);
    // It starts on the configuration, at the frame's time.
    expect(s.sinks[1]!.sink.tags().map((t) => [t.timestamp, isAacConfig(t.data)])).toEqual([[42, true], [42, false]]);
  });

  it("stops its encoder when the next run starts, and when the session ends", () => {
    const s = setUp();
    s.feed.startSourceRun(s.start);
    s.feed.listen(s.listener);
    s.feed.startSourceRun(s.start);
    expect(s.sinks.map((x) => x.sink.running)).toEqual([false, true]);
    s.feed.end();
    expect(s.sinks.map((x) => x.sink.running)).toEqual([false, false]);
    expect(s.routes.size).toBe(0);
  });
});
