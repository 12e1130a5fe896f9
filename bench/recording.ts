// Recording finalize benchmark: `npm run bench:recording`.
//
// Finalizing a recording = closing its playlists as VOD + remuxing the best rendition into an
// MP4 (-c copy, +faststart). The baseline is the bare ffmpeg remux of the same files, run in
// the same process on the same machine, so the ratio shows what onair adds around ffmpeg.
//
// Settings (environment): BENCH_SECONDS (recording length, default 60), BENCH_RUNS (default 3),
// BENCH_GIB (instead of BENCH_SECONDS: a recording of at least this many GiB, made by looping 6 s
// of 42 Mb/s 720p with -c copy; needs about 2.2 × that free in the temp folder).

import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openStore } from "../src/db";
import { createLogger } from "../src/log";
import { locateFfmpeg, ProcessRegistry } from "../src/media";
import { RecordingFinalizer } from "../src/recordings";
import { buildVodPlaylist } from "../src/recordings/vod";
import { parseMediaPlaylist } from "../src/media/playlists";
import { median } from "./lib";

const seconds = Number(process.env.BENCH_SECONDS ?? 60);
const runs = Number(process.env.BENCH_RUNS ?? 3);
const gib = process.env.BENCH_GIB ? Number(process.env.BENCH_GIB) : undefined;
const ffmpeg = locateFfmpeg(process.env.FFMPEG_PATH)?.path;
if (!ffmpeg) throw new Error("no ffmpeg found");

function run(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn(ffmpeg!, args, { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    p.stderr.on("data", (c: Buffer) => (err += c.toString()));
    p.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg ${code}: ${err.slice(-500)}`))));
  });
}

/** A recording as the live pipeline leaves it: 2 s 720p segments, an EVENT playlist, a master. */
async function makeRecording(dir: string): Promise<string> {
  const v = path.join(dir, "0");
  fs.mkdirSync(v, { recursive: true });
  if (gib === undefined) {
    await run([
      "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
      "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-b:v", "3M", "-c:a", "aac",
      "-f", "hls", "-hls_time", "2", "-hls_list_size", "0", "-hls_segment_filename", path.join(v, "s_%05d.ts"), path.join(v, "live.m3u8"),
    ]);
  } else {
    // Encoding gigabytes would take minutes: 6 s are encoded (noise keeps the rate at about
    // 42 Mb/s), then looped with -c copy at disk speed, timestamps rising across the loops.
    const clip = path.join(dir, "clip.ts");
    await run([
      "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
      "-t", "6", "-vf", "noise=alls=30:allf=t", "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-b:v", "40M", "-maxrate", "40M", "-bufsize", "20M",
      "-c:a", "aac", "-f", "mpegts", "-y", clip,
    ]);
    const loops = Math.ceil((gib * 1024 ** 3) / fs.statSync(clip).size) - 1;
    await run([
      "-hide_banner", "-loglevel", "error", "-stream_loop", String(loops), "-i", clip, "-c", "copy",
      "-f", "hls", "-hls_time", "2", "-hls_list_size", "0", "-hls_segment_filename", path.join(v, "s_%05d.ts"), path.join(v, "live.m3u8"),
    ]);
    fs.rmSync(clip);
  }
  const segments = parseMediaPlaylist(fs.readFileSync(path.join(v, "live.m3u8"), "utf8")).segments;
  fs.writeFileSync(path.join(v, "index.m3u8"), buildVodPlaylist(segments, false));
  fs.writeFileSync(path.join(dir, "index.m3u8"), '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=3300000,RESOLUTION=1280x720,NAME="720p"\n0/index.m3u8\n');
  const bytes = segments.reduce((n, x) => n + fs.statSync(path.join(v, x.uri)).size, 0);
  const media = segments.reduce((n, x) => n + x.duration, 0);
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB, ${media.toFixed(0)} s of 720p`;
}

/** The template's files in a session's folder: segments hard-linked (finalize never writes them), playlists copied. */
function linkRecording(template: string, dir: string): void {
  for (const entry of fs.readdirSync(template, { withFileTypes: true })) {
    const from = path.join(template, entry.name);
    const to = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      fs.mkdirSync(to, { recursive: true });
      linkRecording(from, to);
    } else if (entry.name.endsWith(".ts")) fs.linkSync(from, to);
    else fs.copyFileSync(from, to);
  }
}

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-rec-"));
  try {
    const store = await openStore(path.join(work, "onair.db"));
    const user = await store.users.getOrCreate("bench");
    const stream = await store.streams.create({ userId: user.id, name: "bench", profiles: [], record: true, playbackPolicy: null });
    const template = path.join(work, "template");
    process.stdout.write(gib === undefined ? `making a ${seconds} s 720p recording…\n` : `making a ${gib} GiB recording…\n`);
    const what = await makeRecording(template);
    const { handle } = new RecordingFinalizer({
      store,
      events: { raise: async () => {} },
      log: createLogger("silent"),
      registry: new ProcessRegistry(),
      ffmpegPath: ffmpeg,
      recordingsDir: path.join(work, "recordings"),
      links: () => ({ publicUrl: "http://localhost:8080", sign: () => "sig" }),
    });

    const onair: number[] = [];
    const bare: number[] = [];
    const finalize = async (): Promise<number> => {
      const session = await store.sessions.start(stream);
      await store.sessions.end(session.id);
      await store.sessions.setRecordingStatus(session.id, "waiting");
      const dir = path.join(work, "recordings", session.id);
      fs.mkdirSync(dir, { recursive: true });
      linkRecording(template, dir);
      const t0 = process.hrtime.bigint();
      await handle({ id: session.id, queue: "bench", data: { sessionId: session.id }, attempt: 1 });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if ((await store.sessions.get(session.id))!.recordingStatus !== "ready") throw new Error("finalize did not end ready");
      fs.rmSync(dir, { recursive: true, force: true });
      return ms;
    };
    const bareRemux = async (): Promise<number> => {
      const out = path.join(work, "bare.mp4");
      // The same files, with their end (an EVENT playlist without it would make ffmpeg wait).
      const playlist = path.join(work, "bare.m3u8");
      const segments = parseMediaPlaylist(fs.readFileSync(path.join(template, "0", "index.m3u8"), "utf8")).segments;
      fs.writeFileSync(playlist, buildVodPlaylist(segments.map((x) => ({ ...x, uri: path.join(template, "0", x.uri) })), true));
      const t0 = process.hrtime.bigint();
      await run(["-hide_banner", "-nostdin", "-loglevel", "error", "-protocol_whitelist", "file", "-i", playlist,
        "-map", "0:v?", "-map", "0:a?", "-c", "copy", "-bsf:a", "aac_adtstoasc", "-movflags", "+faststart", "-f", "mp4", "-y", out]);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      fs.rmSync(out);
      return ms;
    };
    // Side by side, in turns: whichever goes second reads the segments from a warm page cache.
    for (let i = 0; i < runs; i++) {
      if (i % 2 === 0) {
        onair.push(await finalize());
        bare.push(await bareRemux());
      } else {
        bare.push(await bareRemux());
        onair.push(await finalize());
      }
    }
    await store.close();

    const o = median(onair);
    const b = median(bare);
    process.stdout.write(
      `\nrecording finalize, ${what} (${os.cpus().length} cores, node ${process.version}, ${ffmpeg}), median of ${runs}\n\n` +
        `${"what".padEnd(34)}${"ms".padStart(10)}${"vs bare".padStart(10)}\n` +
        `${"-".repeat(54)}\n` +
        `${"bare ffmpeg -c copy remux".padEnd(34)}${b.toFixed(0).padStart(10)}${"-".padStart(10)}\n` +
        `${"onair finalize (playlists + MP4)".padEnd(34)}${o.toFixed(0).padStart(10)}${(o / b).toFixed(2).padStart(10)}\n` +
        `\nevery run, ms: bare ${bare.map((x) => x.toFixed(0)).join(" ")}; onair ${onair.map((x) => x.toFixed(0)).join(" ")}\n`,
    );
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
