import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Writable } from "node:stream";
import { createLogger } from "../../../src/log";
import { buildLiveStillArgs, LiveStills, ProcessRegistry } from "../../../src/media";
import { probe } from "../../helpers/media";

// A live thumbnail taken when asked for: one short ffmpeg per still, none while the file is
// fresh, one for any number of viewers asking at once.

const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "onair-still-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A second of 800x450 H.264 as FLV: what a reader of the publish is handed from its newest keyframe. */
function source(): Buffer {
  const file = path.join(dir, "src.flv");
  const made = spawnSync(FFMPEG, ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=800x450:rate=30:duration=1", "-c:v", "libx264", "-preset", "ultrafast", "-f", "flv", file]);
  expect(made.status).toBe(0);
  return fs.readFileSync(file);
}

describe("buildLiveStillArgs", () => {
  it.each([
    ["flv", "flv"],
    ["mp4", "mov"],
  ] as const)("%s on stdin: one picture of the default track, scaled, written atomically", (format, demuxer) => {
    const args = buildLiveStillArgs(format, "/x/thumbnail.jpg");
    expect(args.join(" ")).toContain(`-f ${demuxer} -i pipe:0 -map 0:v:0 -frames:v 1`);
    expect(args).toContain("-y");
    expect(args.slice(-3)).toEqual(["-f", "image2", "/x/thumbnail.jpg"]);
    expect(args).toContain("-atomic_writing");
  });
});

describe("LiveStills", () => {
  const flv = source();
  let feeds = 0;
  const input = {
    format: "flv" as const,
    feed: (into: Writable) => {
      feeds++;
      into.end(flv);
      return () => undefined;
    },
  };

  it("takes one still for viewers asking at once, none while it is fresh, another once it is old", async () => {
    const output = path.join(dir, "thumbnail.jpg");
    let now = Date.now();
    const registry = new ProcessRegistry();
    const stills = new LiveStills({ ffmpegPath: FFMPEG, registry, log: createLogger("silent"), output, input, now: () => now });
    await Promise.all([stills.fresh(), stills.fresh(), stills.fresh()]);
    expect(feeds).toBe(1);
    expect(registry.size).toBe(0);
    const { streams } = await probe(output);
    // Scaled to the poster width, the aspect kept.
    expect(streams[0]).toMatchObject({ width: 640, height: 360 });
    await stills.fresh();
    expect(feeds).toBe(1);
    now = fs.statSync(output).mtimeMs + 3000;
    await stills.fresh();
    expect(feeds).toBe(2);
  });

  it("a source it cannot decode leaves no process and no file, and fresh() still resolves", async () => {
    const output = path.join(dir, "none.jpg");
    const registry = new ProcessRegistry();
    const garbage = { format: "flv" as const, feed: (into: Writable) => (into.end(Buffer.from("not a video")), () => undefined) };
    const stills = new LiveStills({ ffmpegPath: FFMPEG, registry, log: createLogger("silent"), output, input: garbage });
    await stills.fresh();
    expect(fs.existsSync(output)).toBe(false);
    expect(registry.size).toBe(0);
  });

  it("a still that failed is not tried again for THUMBNAIL_SECONDS, however often viewers ask", async () => {
    const output = path.join(dir, "failing.jpg");
    let now = Date.now();
    let tries = 0;
    const garbage = { format: "flv" as const, feed: (into: Writable) => (tries++, into.end(Buffer.from("not a video")), () => undefined) };
    const registry = new ProcessRegistry();
    const stills = new LiveStills({ ffmpegPath: FFMPEG, registry, log: createLogger("silent"), output, input: garbage, now: () => now });
    for (let i = 0; i < 5; i++) await stills.fresh();
    expect(tries).toBe(1);
    now += 2001;
    await stills.fresh();
    expect(tries).toBe(2);
    expect(registry.size).toBe(0);
  });

  it("a feed that throws leaves no process running", async () => {
    const registry = new ProcessRegistry();
    const throwing = { format: "flv" as const, feed: (): (() => void) => { throw new Error("no source"); } };
    const stills = new LiveStills({ ffmpegPath: FFMPEG, registry, log: createLogger("silent"), output: path.join(dir, "thrown.jpg"), input: throwing });
    await stills.fresh();
    expect(registry.size).toBe(0);
  }, 10_000);

  it("a new run's input is read by the next still: the one in flight is the one waited for", async () => {
    const output = path.join(dir, "runs.jpg");
    let now = Date.now();
    const reads: string[] = [];
    const slow = { format: "flv" as const, feed: (into: Writable) => (reads.push("first"), setTimeout(() => into.end(flv), 100), () => undefined) };
    const next = { format: "flv" as const, feed: (into: Writable) => (reads.push("second"), into.end(flv), () => undefined) };
    const registry = new ProcessRegistry();
    const stills = new LiveStills({ ffmpegPath: FFMPEG, registry, log: createLogger("silent"), output, input: slow, now: () => now });
    const first = stills.fresh();
    stills.readFrom(next);
    expect(registry.size).toBe(1);
    await Promise.all([first, stills.fresh()]);
    expect(reads).toEqual(["first"]);
    now = fs.statSync(output).mtimeMs + 3000;
    await stills.fresh();
    expect(reads).toEqual(["first", "second"]);
    expect(registry.size).toBe(0);
  });

  it("stop() at the session's end kills a still in flight and starts no other", async () => {
    const registry = new ProcessRegistry();
    // A publish that sends its header and then nothing: ffmpeg waits on it.
    const stalled = { format: "flv" as const, feed: (into: Writable) => (into.write(flv.subarray(0, 13)), () => undefined) };
    const stills = new LiveStills({ ffmpegPath: FFMPEG, registry, log: createLogger("silent"), output: path.join(dir, "stopped.jpg"), input: stalled });
    const started = Date.now();
    const taking = stills.fresh();
    expect(registry.size).toBe(1);
    stills.stop();
    await taking;
    // Well before the 5 s a still is given.
    expect(Date.now() - started).toBeLessThan(3000);
    expect(registry.size).toBe(0);
    await stills.fresh();
    expect(registry.size).toBe(0);
  }, 10_000);
});
