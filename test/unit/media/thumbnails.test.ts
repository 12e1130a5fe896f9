import { renditionLadder } from "../../../src/media/ladder";
import { buildLiveArgs } from "../../../src/media/liveArgs";
import { buildStillArgs, stillAt, THUMBNAIL_SECONDS } from "../../../src/media/thumbnails";

const P = (name: string, width: number, height: number, fps = 30, bitrate = 1_000_000) => ({ name, width, height, fps, bitrate });
const base = { segmentSeconds: 2, fragmentMicros: 200_000, audioBitrate: 128000 };
const JPEG_OUT = "-c:v mjpeg -q:v 5 -threads 1 -update 1 -atomic_writing 1 -f image2 /data/hls/p/thumbnail.jpg";
const SCALE = "scale=w='min(640,iw)':h=-2";

describe("buildLiveArgs with a thumbnail", () => {
  const cases: { name: string; profiles: ReturnType<typeof P>[]; skipFrame: boolean; graph: string }[] = [
    {
      name: "passthrough: a keyframe-only decode of its own, copies untouched",
      profiles: [],
      skipFrame: true,
      graph: `[0:v:0]fps=1/${THUMBNAIL_SECONDS},${SCALE}[thumb]`,
    },
    {
      name: "one profile: a second branch of the split",
      profiles: [P("360p", 640, 360)],
      skipFrame: false,
      graph:
        "[0:v:0]fps=30,split=2[s0][st];" +
        "[s0]scale=w=640:h=360:force_original_aspect_ratio=decrease,pad=640:360:(ow-iw)/2:(oh-ih)/2,setsar=1[o0];" +
        `[st]fps=1/${THUMBNAIL_SECONDS},${SCALE}[thumb]`,
    },
    {
      name: "a ladder: one more branch after the renditions', from the same decode",
      profiles: [P("720p", 1280, 720, 30), P("360p", 640, 360, 15)],
      skipFrame: false,
      graph:
        "[0:v:0]fps=30,split=3[s0][s1][st];" +
        "[s0]scale=w=1280:h=720:force_original_aspect_ratio=decrease,pad=1280:720:(ow-iw)/2:(oh-ih)/2,setsar=1[o0];" +
        "[s1]fps=15,scale=w=640:h=360:force_original_aspect_ratio=decrease,pad=640:360:(ow-iw)/2:(oh-ih)/2,setsar=1[o1];" +
        `[st]fps=1/${THUMBNAIL_SECONDS},${SCALE}[thumb]`,
    },
  ];

  it.each(cases)("$name", ({ profiles, skipFrame, graph }) => {
    const renditions = renditionLadder(profiles, 2);
    const args = buildLiveArgs({ ...base, renditions, thumbnailFile: "/data/hls/p/thumbnail.jpg" });
    const text = args.join(" ");
    expect(args.filter((a) => a === "-i")).toHaveLength(1);
    // A later run of the same session finds the last picture: overwritten, never a refusal to start.
    expect(args.indexOf("-y")).toBeGreaterThan(-1);
    expect(args.indexOf("-y")).toBeLessThan(args.indexOf("-i"));
    expect(args.filter((a) => a === "-filter_complex")).toHaveLength(1);
    expect(args[args.indexOf("-filter_complex") + 1]).toBe(graph);
    // An input option, before -i, and only where nothing else is decoded.
    const skip = args.indexOf("-skip_frame:v");
    if (skipFrame) {
      expect(args[skip + 1]).toBe("nokey");
      expect(skip).toBeLessThan(args.indexOf("-i"));
    } else expect(skip).toBe(-1);
    // Last, after every rendition's pipe, which keep their fds.
    expect(text.endsWith(`-map [thumb] ${JPEG_OUT}`)).toBe(true);
    for (const r of renditions) expect(args).toContain(`pipe:${3 + r.index}`);
    expect(args.filter((a) => a.startsWith("pipe:")).length).toBe(renditions.length + 2); // + the -progress pipe and stdin
  });

  it.each([[[]], [[P("360p", 640, 360)]]])("no thumbnail file: the argv of before (%#)", (profiles) => {
    const args = buildLiveArgs({ ...base, renditions: renditionLadder(profiles, 2) });
    expect(args.join(" ")).not.toMatch(/thumb|mjpeg|skip_frame|image2/);
    expect(args).not.toContain("-y");
    if (profiles.length === 0) expect(args).not.toContain("-filter_complex");
  });
});

describe("a recording's still", () => {
  it.each([
    [120, 60],
    [3, 1.5],
    [0, 0],
    [Number.NaN, 0],
  ])("a recording of %p s is taken at %p s", (duration, at) => {
    expect(stillAt(duration)).toBe(at);
  });

  it("seeks by the index, takes one frame, writes it aside and renames it", () => {
    expect(buildStillArgs({ input: "/r/s/output.mp4", output: "/r/s/thumbnail.jpg", atSeconds: 61.25 })).toEqual([
      "-hide_banner", "-nostdin", "-nostats", "-loglevel", "error", "-y",
      "-ss", "61.250", "-i", "/r/s/output.mp4",
      "-map", "0:v:0", "-frames:v", "1", "-vf", SCALE,
      ...JPEG_OUT.replace("/data/hls/p/", "/r/s/").split(" "),
    ]);
  });
});
