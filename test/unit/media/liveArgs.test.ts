import { renditionLadder } from "../../../src/media/ladder";
import { buildLiveArgs, trackInputFd, trackInputs } from "../../../src/media/liveArgs";
import type { Rendition } from "../../../src/shapes";

const P = (name: string, width: number, height: number, fps = 30, bitrate = 1_000_000) => ({ name, width, height, fps, bitrate });

describe("buildLiveArgs", () => {
  const base = { segmentSeconds: 1, fragmentMicros: 200_000, audioBitrate: 128000 };
  const FMP4 = "-video_track_timescale 90000 -f mp4 -movflags +frag_keyframe+empty_moov+default_base_moof+skip_trailer+cmaf";

  it("passthrough copies the source into one fragmented MP4 on fd 3, audio optional", () => {
    const args = buildLiveArgs({ ...base, renditions: renditionLadder([], 1) });
    expect(args).not.toContain("-filter_complex");
    expect(args.join(" ")).toContain(`-f flv -i pipe:0 -map 0:v:0 -map 0:a:0? -c copy ${FMP4} -frag_duration 200000 pipe:3`);
    // Nothing is decoded for the renditions: no decoder flags.
    expect(args).not.toContain("low_delay");
    expect(args).not.toContain("libx264");
    expect(args.slice(0, 7)).toEqual(["-hide_banner", "-nostdin", "-nostats", "-loglevel", "info", "-progress", "pipe:1"]);
  });

  it("decodes once, snaps to the top frame rate, splits into every profile with aligned keyframes, one pipe each", () => {
    const args = buildLiveArgs({ ...base, segmentSeconds: 2, renditions: renditionLadder([P("720p", 1280, 720, 30, 3_000_000), P("360p", 640, 360, 15, 800_000)], 2) });
    expect(args.filter((a) => a === "-i")).toHaveLength(1);
    const graph = args[args.indexOf("-filter_complex") + 1]!;
    // One fps before the split: the half-rate rendition keeps every other frame of an exact grid.
    expect(graph).toBe(
      "[0:v:0]fps=30,split=2[s0][s1];" +
        "[s0]scale=w=1280:h=720:force_original_aspect_ratio=decrease,pad=1280:720:(ow-iw)/2:(oh-ih)/2,setsar=1[o0];" +
        "[s1]fps=15,scale=w=640:h=360:force_original_aspect_ratio=decrease,pad=640:360:(ow-iw)/2:(oh-ih)/2,setsar=1[o1]",
    );
    const text = args.join(" ");
    expect(text).toContain("-map [o0] -map 0:a:0? -c:v libx264 -preset veryfast -tune zerolatency");
    expect(text).toContain("-b:v 3000000 -maxrate 3000000 -bufsize 6000000 -g 60 -keyint_min 60 -sc_threshold 0 -force_key_frames expr:gte(t,n_forced*2)");
    expect(text).toContain("-b:v 800000 -maxrate 800000 -bufsize 1600000 -g 30 -keyint_min 30");
    expect(text).toContain("-c:a aac -b:a 128000");
    expect(args.filter((a) => a === "-f").length).toBe(3); // the input (flv on stdin) and each output
    expect(text).toContain(`${FMP4} -frag_duration 200000 pipe:3`);
    expect(text).toContain(`${FMP4} -frag_duration 200000 pipe:4`);
  });

  it("an ffmpeg without -movflags cmaf is not asked for it", () => {
    const args = buildLiveArgs({ ...base, cmaf: false, renditions: renditionLadder([], 1) });
    expect(args).toContain("+frag_keyframe+empty_moov+default_base_moof+skip_trailer");
  });

  it("without parts, one fragment per keyframe interval", () => {
    const args = buildLiveArgs({ ...base, fragmentMicros: undefined, renditions: renditionLadder([P("360p", 640, 360)], 2) });
    expect(args).not.toContain("-frag_duration");
    expect(args.slice(-1)).toEqual(["pipe:3"]);
  });

  describe("with WebRTC playback", () => {
    const MOVFLAGS = "+frag_keyframe+empty_moov+default_base_moof+skip_trailer+cmaf";
    const OPUS = ["-map", "0:a:0", "-c:a", "libopus", "-b:a", "96000", "-ar", "48000", "-ac", "2", "-frame_duration", "20", "-ssrc", "42", "-f", "rtp", "rtp://127.0.0.1:5004?pkt_size=1200"];
    const LADDER3 = [P("720p", 1280, 720, 30, 3_000_000), P("480p", 854, 480, 30, 1_500_000), P("360p", 640, 360, 30, 600_000)];
    const tee = (mp4Fd: number, flvFd: number, mp4 = `f=mp4:movflags=${MOVFLAGS}:frag_duration=200000:video_track_timescale=90000`) =>
      ["-flags", "+global_header", "-f", "tee", `[${mp4}]pipe:${mp4Fd}|[f=flv:select=v:flush_packets=1:onfail=ignore]pipe:${flvFd}`];
    /** Where `part` starts in `args`, -1 if it is not there as consecutive arguments. */
    const find = (args: string[], part: string[]) => args.findIndex((_, i) => part.every((p, j) => args[i + j] === p));

    it.each<[string, number, [number, number][]]>([
      ["one rendition", 1, [[3, 4]]],
      ["two renditions", 2, [[3, 5], [4, 6]]],
      ["three renditions", 3, [[3, 6], [4, 7], [5, 8]]],
    ])("%s: each encoded rendition's output is a tee of its fMP4 pipe and an FLV of its video on the pipes after", (_what, n, fds) => {
      const args = buildLiveArgs({ ...base, renditions: renditionLadder(LADDER3.slice(0, n), 1), realtime: { audio: { port: 5004, ssrc: 42 } } });
      let after = 0;
      for (const [mp4Fd, flvFd] of fds) {
        // Right after the rendition's own encoder arguments, in rendition order.
        const at = find(args, ["-ac", "2", ...tee(mp4Fd, flvFd)]);
        expect(at).toBeGreaterThan(after);
        after = at;
      }
      expect(args.filter((a) => a === "tee")).toHaveLength(n);
      // The fMP4 options live in the tee's slave options only.
      expect(args).not.toContain("-video_track_timescale");
      expect(args).not.toContain("-movflags");
      expect(args).not.toContain("-frag_duration");
      // One Opus encode for every rendition, after them all.
      expect(find(args, OPUS)).toBeGreaterThan(after);
      expect(args.filter((a) => a === "libopus")).toHaveLength(1);
    });

    it.each<[string, Partial<typeof base> & { cmaf?: boolean }, string]>([
      ["without parts, no frag_duration", { fragmentMicros: undefined }, `f=mp4:movflags=${MOVFLAGS}:video_track_timescale=90000`],
      ["without cmaf, the movflags without it", { cmaf: false }, "f=mp4:movflags=+frag_keyframe+empty_moov+default_base_moof+skip_trailer:frag_duration=200000:video_track_timescale=90000"],
    ])("the fMP4 slave as without the tee: %s", (_what, change, mp4) => {
      const args = buildLiveArgs({ ...base, ...change, renditions: renditionLadder([P("360p", 640, 360)], 1), realtime: { audio: undefined } });
      expect(find(args, tee(3, 4, mp4))).toBeGreaterThan(0);
    });

    it("without audio, no Opus output", () => {
      const args = buildLiveArgs({ ...base, renditions: renditionLadder(LADDER3.slice(0, 2), 1), realtime: { audio: undefined } });
      expect(find(args, tee(3, 5))).toBeGreaterThan(0);
      expect(args).not.toContain("libopus");
      expect(args.some((a) => a.startsWith("rtp://"))).toBe(false);
      // The AAC of each rendition is still there.
      expect(args.filter((a) => a === "aac")).toHaveLength(2);
    });

    it("keeps the thumbnail as the last output", () => {
      const args = buildLiveArgs({ ...base, thumbnailFile: "/tmp/t.jpg", renditions: renditionLadder([P("360p", 640, 360)], 1), realtime: { audio: { port: 5004, ssrc: 42 } } });
      expect(find(args, OPUS)).toBeGreaterThan(find(args, tee(3, 4)));
      expect(find(args, ["-map", "[thumb]"])).toBeGreaterThan(find(args, OPUS));
      expect(args[args.length - 1]).toBe("/tmp/t.jpg");
    });

    it("tees a passthrough rendition too (its WebRTC viewers need a source without B-frames), with no global header to ask of a copy", () => {
      const args = buildLiveArgs({ ...base, renditions: renditionLadder([], 1), realtime: { audio: { port: 5004, ssrc: 42 } } });
      expect(find(args, ["-c", "copy", ...tee(3, 4).slice(2)])).toBeGreaterThan(0);
      expect(args).not.toContain("+global_header");
      expect(find(args, OPUS)).toBeGreaterThan(find(args, tee(3, 4).slice(2)));
    });

    it("tees every rendition of a mixed list, the global header for the encoded one only", () => {
      const [encoded] = renditionLadder([P("360p", 640, 360)], 1);
      const renditions: Rendition[] = [{ ...encoded!, index: 0 }, { index: 1, name: "source", encode: null }];
      const args = buildLiveArgs({ ...base, renditions, realtime: { audio: undefined } });
      expect(find(args, ["-ac", "2", ...tee(3, 5)])).toBeGreaterThan(0);
      expect(find(args, ["-c", "copy", ...tee(4, 6).slice(2)])).toBeGreaterThan(0);
      expect(args.filter((a) => a === "+global_header")).toHaveLength(1);
    });

    it("gives ffmpeg an SSRC past 2^31 as the signed 32-bit number it takes (the same bits on the wire)", () => {
      const args = buildLiveArgs({ ...base, renditions: renditionLadder([P("360p", 640, 360)], 1), realtime: { audio: { port: 5004, ssrc: 0xcdab0001 } } });
      expect(args[args.indexOf("-ssrc") + 1]).toBe(String(0xcdab0001 - 2 ** 32));
    });

    it("without realtime, the arguments are exactly those of HLS alone", () => {
      const args = buildLiveArgs({ ...base, thumbnailFile: "/tmp/t.jpg", renditions: renditionLadder(LADDER3.slice(0, 2), 1) });
      const scale = (w: number, h: number, i: number) => `[s${i}]scale=w=${w}:h=${h}:force_original_aspect_ratio=decrease,pad=${w}:${h}:(ow-iw)/2:(oh-ih)/2,setsar=1[o${i}]`;
      const encode = (i: number, bitrate: number) => [
        "-map", `[o${i}]`, "-map", "0:a:0?", "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
        "-b:v", String(bitrate), "-maxrate", String(bitrate), "-bufsize", String(bitrate * 2),
        "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-force_key_frames", "expr:gte(t,n_forced*1)",
        "-c:a", "aac", "-b:a", "128000", "-ar", "48000", "-ac", "2",
        "-video_track_timescale", "90000", "-f", "mp4", "-movflags", "+frag_keyframe+empty_moov+default_base_moof+skip_trailer+cmaf", "-frag_duration", "200000", `pipe:${3 + i}`,
      ];
      expect(args).toEqual([
        "-hide_banner", "-nostdin", "-nostats", "-loglevel", "info", "-progress", "pipe:1", "-analyzeduration", "500000", "-y",
        // Slice-threaded decoding: frame threads would hold a frame back each.
        "-flags:v", "low_delay",
        "-f", "flv", "-i", "pipe:0",
        "-filter_complex", `[0:v:0]fps=30,split=3[s0][s1][st];${scale(1280, 720, 0)};${scale(854, 480, 1)};[st]fps=1/2,scale=w='min(640,iw)':h=-2[thumb]`,
        ...encode(0, 3_000_000), ...encode(1, 1_500_000),
        "-map", "[thumb]", "-c:v", "mjpeg", "-q:v", "5", "-threads", "1", "-update", "1", "-atomic_writing", "1", "-f", "image2", "/tmp/t.jpg",
      ]);
    });
  });

  describe("rungs copied from an encoder's ladder beside encoded ones", () => {
    const copied = (index: number, name: string, track?: number): Rendition => ({ index, name, encode: null, ...(track === undefined ? {} : { track }) });
    const renditions: Rendition[] = [copied(0, "360p"), copied(1, "270p", 2), renditionLadder([P("144p", 256, 144, 30, 150_000)], 1).map((r) => ({ ...r, index: 2 }))[0]!];

    it.each<[string, Rendition[], number[]]>([
      ["none: a plain ladder", renditionLadder([P("a", 640, 360)], 1), []],
      ["none: the default track copied", [copied(0, "source")], []],
      ["each other track once, in order", [copied(0, "a", 3), copied(1, "b", 1), copied(2, "c", 3)], [3, 1]],
    ])("trackInputs: %s", (_what, list, expected) => {
      expect(trackInputs(list)).toEqual(expected);
    });

    it("reads each copied track from a pipe after the outputs', on the publisher's clock, and keys the encode on the source's keyframes", () => {
      const args = buildLiveArgs({ ...base, renditions, thumbnailFile: "/tmp/t.jpg" });
      const text = args.join(" ");
      expect(trackInputFd(0, 3, false)).toBe(6);
      expect(text).toContain("-copyts -f flv -i pipe:0 -analyzeduration 500000 -f flv -i pipe:6");
      expect(text).toContain("-map 0:v:0 -map 0:a:0? -c copy");
      expect(text).toContain("-map 1:v:0 -map 0:a:0? -c copy");
      // Each encoded rung snaps to its own rate after the split (a source keyframe stays the frame it keeps).
      expect(args[args.indexOf("-filter_complex") + 1]).toBe("[0:v:0]split=1[s2];[s2]fps=30,scale=w=256:h=144:force_original_aspect_ratio=decrease,pad=256:144:(ow-iw)/2:(oh-ih)/2,setsar=1[o2]");
      expect(text).toContain("-g 60 -sc_threshold 0 -force_key_frames source");
      expect(args).not.toContain("-r");
      expect(text).not.toContain("n_forced");
      // No thumbnail: a sparse output would hold the copied inputs back (see liveArgs.ts).
      expect(text).not.toContain("/tmp/t.jpg");
    });

    it("with WebRTC playback, the track pipes come after the FLV ones", () => {
      const args = buildLiveArgs({ ...base, renditions, realtime: { audio: undefined } });
      expect(trackInputFd(0, 3, true)).toBe(9);
      expect(args.join(" ")).toContain("-f flv -i pipe:9");
    });
  });
});
