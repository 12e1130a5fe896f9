import { spawnSync } from "node:child_process";
import { buildOpusArgs } from "../../../src/media/opusEncoder";

// The Opus encoder of a source packaged as sent: FLV audio in, WebRTC's Opus out as RTP.

const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";

describe("buildOpusArgs", () => {
  const args = buildOpusArgs({ port: 5004, ssrc: 0xdeadbeef });

  it("reads FLV on stdin without probing past its configuration, and sends 20 ms Opus to the route's port and SSRC", () => {
    expect(args.slice(args.indexOf("-f"), args.indexOf("-i") + 2)).toEqual(["-f", "flv", "-i", "pipe:0"]);
    // A probe of ffmpeg's default size holds the first seconds of AAC back before the first packet.
    expect(args[args.indexOf("-probesize") + 1]).toBe("32");
    expect(args[args.indexOf("-analyzeduration") + 1]).toBe("0");
    expect(args.slice(args.indexOf("-map"))).toEqual([
      "-map", "0:a:0", "-c:a", "libopus", "-b:a", "96000", "-ar", "48000", "-ac", "2", "-frame_duration", "20",
      // The same bits on the wire as the unsigned SSRC.
      "-ssrc", String(0xdeadbeef | 0), "-f", "rtp", "rtp://127.0.0.1:5004?pkt_size=1200",
    ]);
  });

  it("has no video output and reads nothing but its stdin", () => {
    expect(args).not.toContain("-c:v");
    expect(args.filter((a) => a === "-i")).toHaveLength(1);
    expect(args).toContain("-nostdin");
  });

  it("is accepted by the ffmpeg here (parsed, then refused for its empty input, not for its options)", () => {
    const run = spawnSync(FFMPEG, args, { input: Buffer.alloc(0), encoding: "utf8", timeout: 10_000 });
    expect(run.stderr).not.toMatch(/Unrecognized option|Option not found|Invalid argument/);
  });
});
