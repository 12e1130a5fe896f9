// DVR reload cost: `npm run bench:dvr`.
//
// What one playlist reload costs the packaging node with a DVR window, whole and as a delta
// update (RFC 8216bis EXT-X-SKIP), against a stream without DVR measured in the same run. A
// playlist changes with every part (0.2 s), so a player's blocking reload after a part finds
// no rendered copy and pays a render and a gzip (both are then shared by every player asking the
// same); the figures are per such reload, the median of BENCH_DVR_RELOADS (200) of them, of
// playlists rendered by the packager's own function (src/hls/playlist.ts) from a track state of
// 2 s segments of five 0.4 s parts (the parts listed on the last two and the open one, as live).
//   bytes, gzip   the answer's size, plain and gzipped (what a player is sent);
//   render, gzip  ms of CPU for the text and for its gzip (level 1, as the packager does).
// Settings: BENCH_DVR_WINDOWS (minutes, 30,120,360), BENCH_DVR_RELOADS (200).

import zlib from "node:zlib";
import { canSkipUntilFor, renderMediaPlaylist, type PlaylistSource } from "../src/hls/playlist";
import type { HlsMap, HlsPart, HlsSegment } from "../src/hls/track";
import { fixed, formatTable, positiveIntFromEnv, positiveIntListFromEnv } from "./lib";

const WINDOWS_MIN = positiveIntListFromEnv("BENCH_DVR_WINDOWS", [30, 120, 360], 360);
const RELOADS = positiveIntFromEnv("BENCH_DVR_RELOADS", 200, 100_000);
const SEGMENT_S = 2;
const PART_S = 0.4;
const TARGET = 2;
/** Without DVR: the packager's window for a 2 s target (three target durations). */
const PLAIN_SEGMENTS = 3;
const START = Date.parse("2026-11-28T00:00:00Z");

const map: HlsMap = { id: 0, uri: "abcd1234_init0.mp4", bytes: Buffer.alloc(0), tracks: [], codecs: [] };

function segment(msn: number, withParts: boolean): HlsSegment {
  const parts: HlsPart[] = withParts
    ? Array.from({ length: SEGMENT_S / PART_S }, (_, i) => ({ id: msn * 10 + i, uri: `abcd1234_p${msn * 10 + i}.m4s`, msn, index: i, duration: PART_S, independent: i === 0, bytes: Buffer.alloc(0) }))
    : [];
  return { msn, uri: `abcd1234_${msn}.m4s`, parts, duration: SEGMENT_S, programDateTime: START + msn * SEGMENT_S * 1000, discontinuity: false, map, bytes: undefined, size: 0 };
}

/** A live track's state: `count` complete segments (parts on the last two), a segment open with two parts. */
function liveState(count: number): PlaylistSource {
  const listed = Array.from({ length: count }, (_, i) => segment(i + 1, i >= count - 2));
  const open = segment(count + 1, true);
  open.parts = open.parts.slice(0, 2);
  return { listed, openSegment: open, next: { msn: count + 1, partUri: `abcd1234_p${(count + 1) * 10 + 2}.m4s` }, mediaSequence: 1, discontinuitySequence: 0, ended: false, currentMap: map };
}

interface Cost {
  bytes: number;
  gzipBytes: number;
  renderMs: number;
  gzipMs: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function measure(render: () => string): Cost {
  const renders: number[] = [];
  const gzips: number[] = [];
  let text = "";
  let gz = Buffer.alloc(0);
  for (let i = 0; i < RELOADS; i++) {
    const a = process.hrtime.bigint();
    text = render();
    const b = process.hrtime.bigint();
    gz = zlib.gzipSync(text, { level: 1 });
    const c = process.hrtime.bigint();
    renders.push(Number(b - a) / 1e6);
    gzips.push(Number(c - b) / 1e6);
  }
  return { bytes: Buffer.byteLength(text), gzipBytes: gz.length, renderMs: median(renders), gzipMs: median(gzips) };
}

function main(): void {
  const options = { targetDuration: TARGET, partTarget: PART_S };
  // Once unmeasured: the first renders pay for the JIT, not for the playlist.
  measure(() => renderMediaPlaylist(liveState(PLAIN_SEGMENTS), options));
  const plain = measure(() => renderMediaPlaylist(liveState(PLAIN_SEGMENTS), options));
  const rows: [string, Cost][] = [["no DVR (3 segments)", plain]];
  const ratios: string[][] = [];
  for (const minutes of WINDOWS_MIN) {
    const state = liveState((minutes * 60) / SEGMENT_S);
    const dvr = { ...options, canSkipUntil: canSkipUntilFor(TARGET) };
    const whole = measure(() => renderMediaPlaylist(state, dvr));
    const delta = measure(() => renderMediaPlaylist(state, { ...dvr, skip: true }));
    rows.push([`${minutes} min DVR, whole`, whole], [`${minutes} min DVR, delta (_HLS_skip)`, delta]);
    const total = (c: Cost) => c.renderMs + c.gzipMs;
    ratios.push([`${minutes} min`, fixed(whole.gzipBytes / plain.gzipBytes, 1), fixed(total(whole) / total(plain), 1), fixed(delta.gzipBytes / plain.gzipBytes, 2), fixed(total(delta) / total(plain), 2)]);
  }
  console.log(`One playlist reload after a part (median of ${RELOADS}), 2 s segments of 0.4 s parts:\n`);
  console.log(formatTable(["playlist", "bytes", "gzip bytes", "render ms", "gzip ms"], rows.map(([name, c]) => [name, String(c.bytes), String(c.gzipBytes), fixed(c.renderMs, 3), fixed(c.gzipMs, 3)])));
  console.log("\nAgainst the stream without DVR (the same run):\n");
  console.log(formatTable(["window", "whole: gzip bytes ×", "whole: CPU ×", "delta: gzip bytes ×", "delta: CPU ×"], ratios));
}

main();
