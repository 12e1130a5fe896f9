import { renditionLadder } from "../../../src/media/ladder";
import { buildLiveArgs } from "../../../src/media/liveArgs";

const P = (name: string, width: number, height: number, fps = 30, bitrate = 1_000_000) => ({ name, width, height, fps, bitrate });

describe("buildLiveArgs", () => {
  const base = { inputUrl: "rtmp://127.0.0.1:1935/live/k", segmentSeconds: 1, fragmentMicros: 200_000, audioBitrate: 128000 };
  const FMP4 = "-video_track_timescale 90000 -f mp4 -movflags +frag_keyframe+empty_moov+default_base_moof+skip_trailer+cmaf";

  it("passthrough copies the source into one fragmented MP4 on fd 3, audio optional", () => {
    const args = buildLiveArgs({ ...base, renditions: renditionLadder([], 1) });
    expect(args).not.toContain("-filter_complex");
    expect(args.join(" ")).toContain(`-i rtmp://127.0.0.1:1935/live/k -map 0:v:0 -map 0:a:0? -c copy ${FMP4} -frag_duration 200000 pipe:3`);
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
    expect(args.filter((a) => a === "-f").length).toBe(2);
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
});
