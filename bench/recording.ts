// Recording finalize benchmark: `npm run bench:recording`.
//
// Finalizing a recording = closing its playlists as VOD + remuxing the best rendition into an
// MP4 (-c copy, +faststart). The baseline is the bare ffmpeg remux of the same files, run in
// the same process on the same machine, so the ratio shows what onair adds around ffmpeg.
//
// Settings (environment): BENCH_SECONDS (recording length, default 60), BENCH_RUNS (default 3).

import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openStore } from "../src/db";
import { createLogger } from "../src/log";
import { locateFfmpeg, ProcessRegistry } from "../src/media";
import { RecordingFinalizer } from "../src/recordings";
import { buildMp4RemuxArgs, buildVodPlaylist } from "../src/recordings/vod";
import { parseMediaPlaylist } from "../src/media/playlists";
import { median } from "./lib";

const seconds = Number(process.env.BENCH_SECONDS ?? 60);
const runs = Number(process.env.BENCH_RUNS ?? 3);
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
async function makeRecording(dir: string): Promise<void> {
  const v = path.join(dir, "0");
  fs.mkdirSync(v, { recursive: true });
  await run([
    "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
    "-t", String(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-b:v", "3M", "-c:a", "aac",
    "-f", "hls", "-hls_time", "2", "-hls_list_size", "0", "-hls_segment_filename", path.join(v, "s_%05d.ts"), path.join(v, "live.m3u8"),
  ]);
  const segments = parseMediaPlaylist(fs.readFileSync(path.join(v, "live.m3u8"), "utf8")).segments;
  fs.writeFileSync(path.join(v, "index.m3u8"), buildVodPlaylist(segments, false));
  fs.writeFileSync(path.join(dir, "index.m3u8"), '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=3300000,RESOLUTION=1280x720,NAME="720p"\n0/index.m3u8\n');
}

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "onair-bench-rec-"));
  try {
    const store = openStore(path.join(work, "onair.db"));
    const user = store.users.getOrCreate("bench");
    const stream = store.streams.create({ userId: user.id, name: "bench", profiles: [], record: true, playbackPolicy: null });
    const template = path.join(work, "template");
    process.stdout.write(`making a ${seconds} s 720p recording…\n`);
    await makeRecording(template);
    const { handle } = new RecordingFinalizer({
      store,
      events: { raise: () => {} },
      log: createLogger("silent"),
      registry: new ProcessRegistry(),
      ffmpegPath: ffmpeg,
      recordingsDir: path.join(work, "recordings"),
      publicUrl: () => "http://localhost:8080",
    });

    const onair: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < runs; i++) {
      const session = store.sessions.start(stream);
      store.sessions.end(session.id);
      store.sessions.setRecordingStatus(session.id, "waiting");
      const dir = path.join(work, "recordings", session.id);
      fs.cpSync(template, dir, { recursive: true });
      let t0 = process.hrtime.bigint();
      await handle({ id: session.id, queue: "bench", data: { sessionId: session.id }, attempt: 1 });
      onair.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (store.sessions.get(session.id)!.recordingStatus !== "ready") throw new Error("finalize did not end ready");

      const out = path.join(work, `bare-${i}.mp4`);
      t0 = process.hrtime.bigint();
      // The same files, finalized (an EVENT playlist without its end would make ffmpeg wait).
      await run(buildMp4RemuxArgs(path.join(dir, "0", "index.m3u8"), out));
      bare.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    store.close();

    const o = median(onair);
    const b = median(bare);
    process.stdout.write(
      `\nrecording finalize, ${seconds} s of 720p (${os.cpus().length} cores, node ${process.version}, ${ffmpeg}), median of ${runs}\n\n` +
        `${"what".padEnd(34)}${"ms".padStart(10)}${"vs bare".padStart(10)}\n` +
        `${"-".repeat(54)}\n` +
        `${"bare ffmpeg -c copy remux".padEnd(34)}${b.toFixed(0).padStart(10)}${"-".padStart(10)}\n` +
        `${"onair finalize (playlists + MP4)".padEnd(34)}${o.toFixed(0).padStart(10)}${(o / b).toFixed(2).padStart(10)}\n`,
    );
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
