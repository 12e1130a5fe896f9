import { decodeAmf0 } from "../../../src/rtmp/amf0";
import { GOP_CACHE_MAX_BYTES, GOP_CACHE_MAX_MS, MAX_VIDEO_TRACKS, isAudioSequenceHeader, isVideoSequenceHeader, LiveSource, type RelayedMedia, type SourceReader } from "../../../src/ingest/liveSource";

// Legacy FLV bodies: frame type and codec in the first byte, the AVC/AAC packet type in the second.
const avcHeader = Buffer.from([0x17, 0x00, 0, 0, 0, 1]);
const avcKey = (n: number) => Buffer.from([0x17, 0x01, 0, 0, 0, n]);
const avcInter = (n: number) => Buffer.from([0x27, 0x01, 0, 0, 0, n]);
const aacHeader = Buffer.from([0xaf, 0x00, 0x12, 0x10]);
const aacFrame = (n: number) => Buffer.from([0xaf, 0x01, n]);
// Enhanced RTMP: IsExHeader, frame type 1, packet type 0 (sequence start) / 1 (coded frames), FourCC.
const hevcHeader = Buffer.from([0x90, ...Buffer.from("hvc1"), 1]);
const hevcKey = Buffer.from([0x91, ...Buffer.from("hvc1"), 0, 0, 0, 1]);
const opusHeader = Buffer.from([0x90, ...Buffer.from("Opus"), 1]);

const video = (timestamp: number, body: Buffer): RelayedMedia => ({ kind: "video", timestamp, body });
const audio = (timestamp: number, body: Buffer): RelayedMedia => ({ kind: "audio", timestamp, body });

const onTrack = (track: number, m: RelayedMedia): RelayedMedia => ({ ...m, track });

class Reader implements SourceReader {
  got: RelayedMedia[] = [];
  ended = 0;
  constructor(
    private readonly open = Infinity,
    readonly track?: number,
  ) {}
  sendMedia(media: RelayedMedia): boolean {
    if (this.got.length >= this.open) return false;
    this.got.push(media);
    return true;
  }
  endPlay(): void {
    this.ended++;
  }
  cut(): void {
    this.ended++;
  }
  bufferedBytes = 0;
}

describe("sequence headers", () => {
  it.each<[string, Buffer, boolean]>([
    ["AVC sequence header", avcHeader, true],
    ["AVC keyframe", avcKey(1), false],
    ["HEVC sequence start (E-RTMP)", hevcHeader, true],
    ["HEVC coded frames (E-RTMP)", hevcKey, false],
    ["empty", Buffer.alloc(0), false],
  ])("video: %s", (_what, body, expected) => expect(isVideoSequenceHeader(body)).toBe(expected));

  it.each<[string, Buffer, boolean]>([
    ["AAC sequence header", aacHeader, true],
    ["AAC frame", aacFrame(1), false],
    ["Opus sequence start (E-RTMP)", opusHeader, true],
    ["MP3", Buffer.from([0x2f, 0x00]), false],
    ["empty", Buffer.alloc(0), false],
  ])("audio: %s", (_what, body, expected) => expect(isAudioSequenceHeader(body)).toBe(expected));
});

describe("LiveSource", () => {
  it("sends every message to the readers there, in order", () => {
    const source = new LiveSource();
    const a = new Reader();
    source.add(a);
    const sent = [video(0, avcHeader), audio(0, aacHeader), video(0, avcKey(1)), audio(20, aacFrame(1)), video(33, avcInter(2))];
    for (const m of sent) source.push(m);
    expect(a.got).toEqual(sent);
  });

  it("starts a late reader with the metadata, the sequence headers and the pictures since the newest keyframe", () => {
    const source = new LiveSource();
    source.pushData(0, "onMetaData", [{ width: 320, height: 240 }]);
    for (const m of [video(0, avcHeader), audio(0, aacHeader), video(0, avcKey(1)), video(33, avcInter(2)), video(1000, avcKey(3)), audio(1010, aacFrame(4)), video(1033, avcInter(5))]) source.push(m);
    const late = new Reader();
    source.add(late);
    expect(late.got.map((m) => [m.kind, m.timestamp])).toEqual([
      ["data", 0],
      ["video", 0],
      ["audio", 0],
      ["video", 1000],
      ["audio", 1010],
      ["video", 1033],
    ]);
    expect(decodeAmf0(late.got[0]!.body)).toEqual(["onMetaData", { width: 320, height: 240 }]);
    // Then it is one reader among the rest.
    source.push(video(1066, avcInter(6)));
    expect(late.got.at(-1)!.timestamp).toBe(1066);
  });

  it("forgets the pictures cached under a configuration when another comes: a late reader waits for the next keyframe", () => {
    const source = new LiveSource();
    for (const m of [video(0, avcHeader), audio(0, aacHeader), video(1000, avcKey(1)), video(1033, avcInter(2))]) source.push(m);
    // The same configuration again (encoders repeat it): the pictures still decode with it.
    source.push(video(1050, avcHeader));
    const same = new Reader();
    source.add(same);
    expect(same.got.map((m) => m.timestamp)).toEqual([1050, 0, 1000, 1033]);
    const other = Buffer.from([0x17, 0x00, 0, 0, 0, 2]);
    source.push(video(1066, other));
    const late = new Reader();
    source.add(late);
    expect(late.got.map((m) => m.body)).toEqual([other, aacHeader]);
    source.push(video(1100, avcKey(3)));
    expect(late.got.at(-1)!.timestamp).toBe(1100);
  });

  it("keeps nothing from before the first keyframe (it would not decode)", () => {
    const source = new LiveSource();
    source.push(video(0, avcHeader));
    source.push(video(10, avcInter(1)));
    source.push(audio(20, aacFrame(2)));
    const late = new Reader();
    source.add(late);
    expect(late.got.map((m) => m.body)).toEqual([avcHeader]);
  });

  it("keeps an encoder's ladder apart: each reader gets its own track's video (headers, pictures since its keyframe) and everyone's audio", () => {
    const source = new LiveSource();
    const main = new Reader();
    const one = new Reader(Infinity, 1);
    source.add(main);
    source.add(one);
    const sent = [video(0, avcHeader), onTrack(1, video(0, avcHeader)), audio(0, aacHeader), video(0, avcKey(1)), onTrack(1, video(0, avcKey(2))), audio(20, aacFrame(3)), onTrack(1, video(33, avcInter(4))), video(33, avcInter(5))];
    for (const m of sent) source.push(m);
    // The default track's readers see exactly what they saw before tracks existed.
    expect(main.got).toEqual(sent.filter((m) => m.track === undefined));
    expect(one.got).toEqual(sent.filter((m) => m.kind === "audio" || m.track === 1));
    const late = new Reader(Infinity, 1);
    source.add(late);
    expect(late.got.map((m) => [m.kind, m.track, m.timestamp])).toEqual([
      ["video", 1, 0],
      ["audio", undefined, 0],
      ["video", 1, 0],
      ["audio", undefined, 20],
      ["video", 1, 33],
    ]);
    expect(source.videoTracks).toEqual([
      { id: 0, codec: "avc1" },
      { id: 1, codec: "avc1" },
    ]);
    // A reader of a track the publish does not have gets its audio only.
    const none = new Reader(Infinity, 7);
    source.add(none);
    expect(none.got.every((m) => m.kind === "audio")).toBe(true);
  });

  it("keeps at most MAX_VIDEO_TRACKS tracks apart; video of any other is dropped", () => {
    const source = new LiveSource();
    for (let t = 1; t < MAX_VIDEO_TRACKS + 3; t++) source.push(onTrack(t, video(0, avcHeader)));
    expect(source.videoTracks).toHaveLength(MAX_VIDEO_TRACKS);
    const extra = new Reader(Infinity, MAX_VIDEO_TRACKS + 1);
    source.add(extra);
    source.push(onTrack(MAX_VIDEO_TRACKS + 1, video(10, avcKey(1))));
    expect(extra.got).toEqual([]);
  });

  it("drops a cached group of pictures older than GOP_CACHE_MAX_MS (a track that stopped sending video)", () => {
    const source = new LiveSource();
    source.push(onTrack(1, video(0, avcKey(1))));
    source.push(audio(GOP_CACHE_MAX_MS + 1, aacFrame(2)));
    const late = new Reader(Infinity, 1);
    source.add(late);
    expect(late.got).toEqual([]);
  });

  it("drops the cached group of pictures past its size cap: a late reader then waits for the next keyframe", () => {
    const source = new LiveSource();
    source.push(video(0, avcKey(1)));
    source.push(video(33, Buffer.concat([avcInter(2), Buffer.alloc(GOP_CACHE_MAX_BYTES)])));
    const late = new Reader();
    source.add(late);
    expect(late.got).toEqual([]);
    source.push(video(66, avcKey(3)));
    expect(late.got.map((m) => m.timestamp)).toEqual([66]);
  });

  it("lets go of a reader that takes no more, and of one removed", () => {
    const source = new LiveSource();
    const full = new Reader(1);
    const removed = new Reader();
    source.add(full);
    source.add(removed);
    source.push(video(0, avcKey(1)));
    source.remove(removed);
    source.push(video(33, avcInter(2)));
    expect(source.readers.size).toBe(0);
    expect(full.got).toHaveLength(1);
    expect(removed.got).toHaveLength(1);
  });

  it("tells every reader of the end once, and ends a reader that joins after it at once", () => {
    const source = new LiveSource();
    const a = new Reader();
    source.add(a);
    source.end();
    source.end();
    expect(a.ended).toBe(1);
    source.push(video(0, avcKey(1)));
    expect(a.got).toEqual([]);
    const late = new Reader();
    source.add(late);
    expect(late.ended).toBe(1);
  });
});
