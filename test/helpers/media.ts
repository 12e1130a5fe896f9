import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";

export const FFMPEG = process.env.FFMPEG_PATH || "ffmpeg";
export const FFPROBE = process.env.FFPROBE_PATH || "ffprobe";

export interface Push {
  child: ChildProcess;
  /** Exit code (or signal) and how long after the start it came. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number; stderr: string }>;
}

/**
 * Pushes a few seconds of testsrc2 + sine over RTMP with 1 s keyframes, as OBS would
 * (../shared/tools/push-test-stream), in real time.
 */
export function pushTestStream(url: string, opts: { seconds?: number; size?: string; fps?: number; codec?: string[]; audio?: string[] } = {}): Push {
  const { seconds = 4, size = "320x180", fps = 30 } = opts;
  const video = opts.codec ?? ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", String(fps), "-keyint_min", String(fps), "-pix_fmt", "yuv420p", "-b:v", "500k"];
  const args = [
    "-hide_banner", "-nostdin", "-loglevel", "warning", "-re",
    "-f", "lavfi", "-i", `testsrc2=size=${size}:rate=${fps}`,
    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", String(seconds), ...video, ...(opts.audio ?? ["-c:a", "aac", "-b:a", "64k"]), "-ar", "48000", "-f", "flv", url,
  ];
  const started = Date.now();
  const child = spawn(FFMPEG, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number; stderr: string }>((resolve) =>
    child.once("close", (code, signal) => resolve({ code, signal, afterMs: Date.now() - started, stderr })),
  );
  return { child, exited };
}

/** Polls `check` until it returns a truthy value (returned), or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 20_000, everyMs = 100): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface ProbedStream {
  codec_type: string;
  codec_name: string;
  width?: number;
  height?: number;
}

/**
 * ffprobe of a URL or file: its streams and duration. Asynchronous: the server under test
 * runs in this process and must keep answering ffprobe's requests.
 */
/** An SRT caller (ffmpeg) sending `seconds` of test pattern and tone as MPEG-TS to `url`; resolves when it exits. */
export function callSrt(url: string, seconds: number): Promise<{ code: number | null; stderr: string; afterMs: number }> {
  const started = Date.now();
  const child = spawn(FFMPEG, [
    "-hide_banner", "-nostdin", "-loglevel", "warning",
    "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-re", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-pix_fmt", "yuv420p", "-b:v", "500k",
    "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", url,
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stderr, afterMs: Date.now() - started })));
}

/** Runs a command to its end (killed after 30 s): asynchronous, as the server under test runs in this process. */
export function runProcess(command: string, args: string[]): Promise<{ out: string; err: string; code: number | null }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ out, err, code });
    });
  });
}

export async function probe(target: string): Promise<{ streams: ProbedStream[]; duration: number }> {
  const { out, err, code } = await runProcess(FFPROBE, ["-v", "error", "-show_entries", "stream=codec_type,codec_name,width,height:format=duration", "-of", "json", target]);
  if (code !== 0) throw new Error(`ffprobe ${target} failed (${code}): ${err}`);
  const json = JSON.parse(out) as { streams: ProbedStream[]; format: { duration?: string } };
  return { streams: json.streams, duration: Number(json.format.duration ?? 0) };
}

/**
 * PIDs of ffmpeg processes whose command line or working directory mentions `needle` (e.g. a
 * data dir: a live pipeline runs in its session's media folder and names no file itself).
 */
export function ffmpegPidsMentioning(needle: string): number[] {
  const res = spawnSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  const cwd = (pid: number) => {
    try {
      return fs.readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      return "";
    }
  };
  return res.stdout
    .split("\n")
    .filter((l) => l.includes("ffmpeg"))
    .map((l) => ({ pid: Number(l.trim().split(/\s+/)[0]), line: l }))
    .filter(({ pid, line }) => line.includes(needle) || cwd(pid).includes(needle))
    .map(({ pid }) => pid);
}
