import { parseFragment, parseInit, type FragmentInfo } from "../../../src/hls";
import { initSegment, PartFragmenter, SampleFragmenter, type Fragmenter, type FragmenterTrack, type Mp4Track, type TimedSample } from "../../../src/mp4";
import { readFragmentedMp4, type Mp4FileSample } from "../../helpers/enhancedFrames";

// The fragmenters read back through the packager's own parser (parseInit, parseFragment) and,
// sample by sample, through the test MP4 reader: what a player would get from the parts.

const VIDEO = 1;
const AUDIO = 2;
const avcC = Buffer.from("0164001fffe1000467640000", "hex");
const asc = Buffer.from("1190", "hex");
const videoTrack: Mp4Track = { id: VIDEO, kind: "video", codec: "avc1", config: avcC, width: 320, height: 180, timescale: 90000 };
const audioTrack: Mp4Track = { id: AUDIO, kind: "audio", codec: "mp4a", config: asc, channels: 2, sampleRate: 48000, timescale: 48000 };
const VIDEO_TIMING: FragmenterTrack = { id: VIDEO, timescale: 90000, defaultDuration: 3000 };
const AUDIO_TIMING: FragmenterTrack = { id: AUDIO, timescale: 48000, defaultDuration: 1024 };

// Each sample's data names it, so it can be found again in the fragments.
const v = (at: number, keyframe: boolean, compositionOffset = 0): TimedSample => ({ trackId: VIDEO, at, data: Buffer.from(`v${at}`), keyframe, compositionOffset });
const a = (at: number): TimedSample => ({ trackId: AUDIO, at, data: Buffer.from(`a${at}`), keyframe: true, compositionOffset: 0 });

interface StreamShape {
  fps: number;
  seconds: number;
  /** Frames from one keyframe to the next. */
  gop: number;
  audio?: boolean;
  /** Times as a publisher's millisecond clock gives them (rounded to ms, then to the timescale). */
  msClock?: boolean;
}

/** Video and AAC at 48 kHz, interleaved by time as a publisher sends them. */
function stream({ fps, seconds, gop, audio = true, msClock = false }: StreamShape): TimedSample[] {
  const ticks = (seconds: number, timescale: number) => (msClock ? Math.round(Math.round(seconds * 1000) * (timescale / 1000)) : Math.round(seconds * timescale));
  const out: { t: number; s: TimedSample }[] = [];
  for (let i = 0; i < fps * seconds; i++) out.push({ t: i / fps, s: v(ticks(i / fps, 90000), i % gop === 0) });
  if (audio) for (let i = 0; (i * 1024) / 48000 < seconds; i++) out.push({ t: (i * 1024) / 48000, s: a(ticks((i * 1024) / 48000, 48000)) });
  return out.sort((x, y) => x.t - y.t).map((x) => x.s);
}

interface Run {
  fragments: Buffer[];
  /** The fragments each add returned, by sample. */
  perAdd: Buffer[][];
  flushed: Buffer[];
}

function run(f: Fragmenter, samples: readonly TimedSample[]): Run {
  const perAdd = samples.map((s) => f.add(s));
  const flushed = f.flush();
  return { fragments: [...perAdd.flat(), ...flushed], perAdd, flushed };
}

const init = (tracks: readonly Mp4Track[]) => initSegment(tracks);

/** One fragment as the packager reads it, and its samples one by one. */
function read(initBytes: Buffer, fragment: Buffer): { info: FragmentInfo; samples: Record<number, Mp4FileSample[]> } {
  const info = parseFragment(fragment, parseInit(initBytes));
  const samples = Object.fromEntries(readFragmentedMp4(Buffer.concat([initBytes, fragment])).tracks.map((t) => [t.id, t.samples]));
  return { info, samples };
}

const names = (samples: readonly Mp4FileSample[] | undefined) => (samples ?? []).map((s) => s.data.toString());
const both = [videoTrack, audioTrack];
const timings = [VIDEO_TIMING, AUDIO_TIMING];

describe("SampleFragmenter", () => {
  it("writes each sample at once, timed from the previous one of its track, the first with the track's default", () => {
    const f = new SampleFragmenter(timings);
    const samples = [v(0, true, 6000), a(480), v(3000, false, -3000), a(1504), v(6003, false)];
    const { perAdd, flushed } = run(f, samples);
    expect(perAdd.map((out) => out.length)).toEqual([1, 1, 1, 1, 1]);
    expect(flushed).toEqual([]);
    const parsed = perAdd.map(([bytes]) => read(init(both), bytes!));
    expect(parsed.map((p) => p.info.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(parsed.map((p) => p.info.tracks.map((t) => [t.id, t.baseDecodeTime, t.sampleCount, t.duration, t.startsWithSync]))).toEqual([
      [[VIDEO, 0, 1, 3000, true]],
      [[AUDIO, 480, 1, 1024, true]],
      [[VIDEO, 3000, 1, 3000, false]],
      [[AUDIO, 1504, 1, 1024, true]],
      [[VIDEO, 6003, 1, 3003, false]],
    ]);
    expect(parsed.map((p) => (p.samples[VIDEO] ?? []).map((s) => s.compositionOffset))).toEqual([[6000], [], [-3000], [], [0]]);
  });

  it("refuses a sample of a track it was not given", () => {
    expect(() => new SampleFragmenter([VIDEO_TIMING]).add(a(0))).toThrow(/track 2/);
  });
});

describe("PartFragmenter", () => {
  const initBytes = init(both);

  /** Every fragment read back, in order. */
  const readAll = (fragments: readonly Buffer[], bytes = initBytes) => fragments.map((f) => read(bytes, f));

  it.each([
    // 0.2 s at 90 kHz is 18000: six 3000-tick frames, five 3750-tick ones (0.208 s, the first span to reach 0.2).
    [30, 6, 18000],
    [24, 5, 18750],
    [25, 5, 18000],
    [60, 12, 18000],
    [10, 2, 18000],
  ])("%i fps: parts of %i frames (%i ticks) between keyframes", (fps, frames, ticks) => {
    const { fragments } = run(new PartFragmenter(timings, VIDEO, 0.2), stream({ fps, seconds: 4, gop: fps * 4, audio: false }));
    const video = readAll(fragments).map((p) => p.info.tracks.find((t) => t.id === VIDEO)!);
    // All but the last (what flush found held) are whole parts.
    for (const t of video.slice(0, -1)) expect([t.sampleCount, t.duration]).toEqual([frames, ticks]);
    expect(video.at(-1)!.sampleCount).toBeLessThanOrEqual(frames);
    expect(video.reduce((n, t) => n + t.sampleCount, 0)).toBe(fps * 4);
  });

  it.each([
    ["a keyframe every second", { fps: 30, seconds: 3, gop: 30 }],
    ["a keyframe every 7 frames, shorter than a part", { fps: 30, seconds: 2, gop: 7 }],
    ["24 fps, keyframes off the part grid", { fps: 24, seconds: 3, gop: 13 }],
  ])("%s: each keyframe opens a fragment, and only the fragments that start with one say so", (_name, shape) => {
    const samples = stream(shape);
    const { fragments } = run(new PartFragmenter(timings, VIDEO, 0.2), samples);
    const parsed = readAll(fragments);
    const keyframes = samples.filter((s) => s.trackId === VIDEO && s.keyframe).map((s) => s.data.toString());
    const firsts = parsed.map((p) => p.samples[VIDEO]?.[0]);
    for (const key of keyframes) expect(firsts.map((s) => s?.data.toString())).toContain(key);
    // No keyframe sits after the first video sample of a fragment.
    for (const p of parsed) expect((p.samples[VIDEO] ?? []).slice(1).filter((s) => s.sync)).toEqual([]);
    const video = parsed.map((p) => p.info.tracks.find((t) => t.id === VIDEO));
    expect(video.map((t) => t?.startsWithSync)).toEqual(firsts.map((s) => s?.sync));
    // Between keyframes the parts still end at about 0.2 s: never more than 6 frames at 30 fps.
    for (const p of parsed) expect((p.samples[VIDEO] ?? []).length).toBeLessThanOrEqual(shape.fps === 30 ? 6 : 5);
  });

  it.each([
    ["steady clocks", { fps: 30, seconds: 3, gop: 30 }],
    ["24 fps", { fps: 24, seconds: 3, gop: 48 }],
    ["a publisher's millisecond clock (durations of 2970/3060 and 1008/1056 ticks)", { fps: 30, seconds: 3, gop: 30, msClock: true }],
    ["a millisecond clock at 24 fps", { fps: 24, seconds: 3, gop: 24, msClock: true }],
  ])("%s: every duration reaches the next sample of its track, across fragments too", (_name, shape) => {
    const samples = stream(shape);
    const { fragments } = run(new PartFragmenter(timings, VIDEO, 0.2), samples);
    const parsed = readAll(fragments);
    for (const id of [VIDEO, AUDIO]) {
      const flat = parsed.flatMap((p) => p.samples[id] ?? []);
      const sent = samples.filter((s) => s.trackId === id);
      // Every sample, once, in order, at (about) its own time: no more than a millisecond off.
      expect(names(flat)).toEqual(sent.map((s) => s.data.toString()));
      flat.forEach((s, i) => expect(Math.abs(s.decodeTime - sent[i]!.at)).toBeLessThanOrEqual(id === VIDEO ? 90 : 48));
      for (let i = 0; i + 1 < flat.length; i++) expect([i, flat[i]!.decodeTime + flat[i]!.duration]).toEqual([i, flat[i + 1]!.decodeTime]);
      for (const s of flat) expect(s.duration).toBeGreaterThan(0);
      // As the packager reads it: each fragment's tfdt is where the one before it ended.
      const runs = parsed.map((p) => p.info.tracks.find((t) => t.id === id)).filter((t) => t !== undefined);
      for (let n = 0; n + 1 < runs.length; n++) expect(runs[n + 1]!.baseDecodeTime).toBe(runs[n]!.baseDecodeTime + runs[n]!.duration);
    }
  });

  it("on steady clocks every sample keeps its own decode time", () => {
    const samples = stream({ fps: 30, seconds: 2, gop: 30 });
    const parsed = readAll(run(new PartFragmenter(timings, VIDEO, 0.2), samples).fragments);
    const times = parsed.flatMap((p) => [...(p.samples[VIDEO] ?? []), ...(p.samples[AUDIO] ?? [])].map((s) => [s.data.toString(), s.decodeTime] as const));
    expect(new Map(times)).toEqual(new Map(samples.map((s) => [s.data.toString(), s.at] as const)));
  });

  it("puts the audio that starts before a part's end in that part, and the rest in the next", () => {
    const samples = stream({ fps: 30, seconds: 3, gop: 30 });
    const { fragments } = run(new PartFragmenter(timings, VIDEO, 0.2), samples);
    const parsed = readAll(fragments);
    let audioSeen = 0;
    for (const [n, p] of parsed.entries()) {
      const video = p.info.tracks.find((t) => t.id === VIDEO)!;
      const end = (video.baseDecodeTime + video.duration) / 90000;
      const audio = p.samples[AUDIO] ?? [];
      audioSeen += audio.length;
      const last = n === parsed.length - 1;
      // All audio before the end is here or in an earlier part; none from at or after it.
      const before = samples.filter((s) => s.trackId === AUDIO && s.at / 48000 < end).length;
      if (!last) expect([n, audioSeen]).toEqual([n, before]);
      for (const s of audio) expect(s.decodeTime / 48000).toBeLessThan(last ? Infinity : end);
    }
    expect(audioSeen).toBe(samples.filter((s) => s.trackId === AUDIO).length);
  });

  it("carries B-frames' composition offsets through", () => {
    const samples = [v(0, true, 6000), v(3000, false, 9000), v(6000, false, -3000), v(9000, false, 0)];
    const { fragments } = run(new PartFragmenter([VIDEO_TIMING], VIDEO, 0.2), samples);
    expect(fragments).toHaveLength(1);
    expect(read(init([videoTrack]), fragments[0]!).samples[VIDEO]!.map((s) => s.compositionOffset)).toEqual([6000, 9000, -3000, 0]);
  });

  it("flush gives what is held as one fragment, then nothing; a fragmenter given nothing flushes nothing", () => {
    const f = new PartFragmenter(timings, VIDEO, 0.2);
    const held = [v(0, true), a(0), v(3000, false), a(1024), a(2048)];
    expect(held.flatMap((s) => f.add(s))).toEqual([]);
    const flushed = f.flush();
    expect(flushed).toHaveLength(1);
    const { info, samples } = read(initBytes, flushed[0]!);
    expect(names(samples[VIDEO])).toEqual(["v0", "v3000"]);
    expect(names(samples[AUDIO])).toEqual(["a0", "a1024", "a2048"]);
    // The last of each track, having no successor, lasts as long as the one before it.
    expect(info.tracks.map((t) => [t.id, t.duration])).toEqual([
      [VIDEO, 6000],
      [AUDIO, 3072],
    ]);
    expect(f.flush()).toEqual([]);
    expect(new PartFragmenter(timings, VIDEO, 0.2).flush()).toEqual([]);
  });

  it("an audio-only stream (no video track) is cut on audio into parts of about partSeconds", () => {
    const samples = stream({ fps: 0, seconds: 2, gop: 1 });
    const audioInit = init([audioTrack]);
    const { fragments } = run(new PartFragmenter([AUDIO_TIMING], undefined, 0.2), samples);
    const parsed = readAll(fragments, audioInit);
    // 10 AAC frames (0.213 s) is the first span to reach 0.2 s: every AAC frame is a sync sample,
    // which must not cut parts of one frame each.
    const counts = parsed.map((p) => p.info.tracks[0]!.sampleCount);
    for (const c of counts.slice(0, -1)) expect(c).toBe(10);
    expect(counts.reduce((x, y) => x + y, 0)).toBe(samples.length);
    for (let n = 0; n + 1 < parsed.length; n++) {
      const [t, next] = [parsed[n]!.info.tracks[0]!, parsed[n + 1]!.info.tracks[0]!];
      expect(next.baseDecodeTime).toBe(t.baseDecodeTime + t.duration);
    }
  });

  it("keeps writing parts of audio while the video stalls, and a keyframe after the stall opens a part at its own time", () => {
    // 1 s of video and audio; then 1.5 s of audio alone; then video again from a keyframe.
    const before = stream({ fps: 30, seconds: 1, gop: 30 });
    const stalled: TimedSample[] = [];
    for (let i = 47; (i * 1024) / 48000 < 2.5; i++) stalled.push(a(i * 1024));
    const after = [v(2.5 * 90000, true), v(2.5 * 90000 + 3000, false)];
    const f = new PartFragmenter(timings, VIDEO, 0.2);
    const early = before.flatMap((s) => f.add(s));
    const during = stalled.map((s) => f.add(s));
    const late = [...after.flatMap((s) => f.add(s)), ...f.flush()];
    // At least one part for every 0.4 s of audio, so players are not starved of sound.
    const stallParts = during.flat();
    expect(stallParts.length).toBeGreaterThanOrEqual(3);
    const parsed = readAll([...early, ...stallParts, ...late]);
    const audio = parsed.flatMap((p) => p.samples[AUDIO] ?? []);
    expect(audio).toHaveLength(before.filter((s) => s.trackId === AUDIO).length + stalled.length);
    for (let i = 0; i + 1 < audio.length; i++) expect(audio[i]!.decodeTime + audio[i]!.duration).toBe(audio[i + 1]!.decodeTime);
    // Audio fills parts of the part length (half a part more while a frame waits for its
    // successor): a part never runs twice PART-TARGET.
    for (const p of readAll(stallParts)) {
      const t = p.info.tracks.find((x) => x.id === AUDIO)!;
      expect(t.duration / 48000).toBeLessThanOrEqual(0.3 + 1024 / 48000);
    }
    // The keyframe opens a part of its own: the audio held before it went out first.
    const lateParts = readAll(late);
    const resumed = lateParts.find((p) => (p.samples[VIDEO]?.length ?? 0) > 0)!;
    expect(lateParts.indexOf(resumed)).toBeLessThanOrEqual(1);
    expect(resumed.samples[VIDEO]![0]!.data.toString()).toBe(`v${2.5 * 90000}`);
    expect(resumed.info.tracks.find((t) => t.id === AUDIO)?.baseDecodeTime ?? Infinity).toBeGreaterThanOrEqual(2.5 * 48000 - 1024);
    expect(resumed.info.tracks.find((t) => t.id === VIDEO)).toMatchObject({ baseDecodeTime: 2.5 * 90000, startsWithSync: true });
  });

  it("numbers its fragments 1, 2, 3, … in the order it returns them", () => {
    const { fragments } = run(new PartFragmenter(timings, VIDEO, 0.2), stream({ fps: 30, seconds: 2, gop: 15 }));
    expect(fragments.length).toBeGreaterThan(5);
    expect(readAll(fragments).map((p) => p.info.sequence)).toEqual(fragments.map((_, i) => i + 1));
  });

  it("refuses a sample of a track it was not given", () => {
    expect(() => new PartFragmenter([VIDEO_TIMING], VIDEO, 0.2).add(a(0))).toThrow(/track 2/);
  });
});
