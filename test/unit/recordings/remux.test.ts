import { buildMp4RemuxArgs } from "../../../src/recordings/vod";
import { ProgressWatchdog, progressReading } from "../../../src/recordings/remux";
import { mp4BytesNeeded, saysNoSpace, spaceShortfall } from "../../../src/recordings/space";

const MiB = 1024 * 1024;

describe("the remux's progress watchdog", () => {
  it("never fires on a remux that keeps moving, however long it runs", () => {
    const w = new ProgressWatchdog(30_000, 0);
    // Ten hours of remux, a progress line every half second: the old fixed 50 s would have
    // killed it 720 times over.
    for (let t = 0; t <= 10 * 3600_000; t += 500) {
      w.observe("out_time_us", t * 60_000, t);
      expect(w.stalledFor(t)).toBeUndefined();
    }
  });

  it("fires once nothing has moved for the limit, and says for how long", () => {
    const w = new ProgressWatchdog(30_000, 0);
    w.observe("out_time_us", 1_000_000, 1_000);
    w.observe("total_size", 5_000, 1_000);
    // The same readings again are no progress.
    w.observe("out_time_us", 1_000_000, 20_000);
    w.observe("total_size", 5_000, 20_000);
    expect(w.stalledFor(30_999)).toBeUndefined();
    expect(w.stalledFor(31_000)).toBe(30_000);
  });

  it("counts the output file changing as progress: the +faststart pass prints nothing while it rewrites the file", () => {
    const w = new ProgressWatchdog(30_000, 0);
    w.observe("out_time_us", 400_000_000, 10_000);
    // progress lines stop; the file's modification time keeps moving for another minute
    for (let t = 10_000; t <= 70_000; t += 1_000) w.observe("file mtime", 1_700_000_000_000 + t, t);
    expect(w.stalledFor(70_000)).toBeUndefined();
    expect(w.stalledFor(100_000)).toBe(30_000);
  });

  it("a remux that never starts writing is stalled after the limit", () => {
    const w = new ProgressWatchdog(5_000, 0);
    expect(w.stalledFor(4_999)).toBeUndefined();
    expect(w.stalledFor(5_000)).toBe(5_000);
  });

  it("reads out_time_us and total_size from ffmpeg's -progress lines, nothing else", () => {
    expect(progressReading("out_time_us=415126083")).toEqual({ reading: "out_time_us", value: 415126083 });
    expect(progressReading("total_size=2141687531")).toEqual({ reading: "total_size", value: 2141687531 });
    for (const line of ["out_time_us=N/A", "out_time=00:06:55.126083", "progress=continue", "frame=12", "total_size=-1", ""]) {
      expect(progressReading(line)).toBeUndefined();
    }
  });

  it("the remux asks ffmpeg for its progress on stdout", () => {
    const args = buildMp4RemuxArgs("/r/0/index.m3u8", "/r/output.mp4.tmp");
    expect(args.slice(args.indexOf("-progress"), args.indexOf("-progress") + 2)).toEqual(["-progress", "pipe:1"]);
    expect(args.at(-1)).toBe("/r/output.mp4.tmp");
  });
});

describe("room for a recording's MP4", () => {
  it("needs the rendition's size again, 5 % and 1 MiB", () => {
    expect(mp4BytesNeeded(0)).toBe(MiB);
    expect(mp4BytesNeeded(2048 * MiB)).toBe(Math.ceil(2048 * MiB * 1.05) + MiB);
  });

  it("fits only when STORAGE_MIN_FREE_MB stays free after it, and says why not", () => {
    const needed = mp4BytesNeeded(100 * MiB);
    expect(spaceShortfall(needed + 64 * MiB, needed, 64 * MiB)).toBeUndefined();
    const why = spaceShortfall(needed + 64 * MiB - 1, needed, 64 * MiB)!;
    expect(why).toMatch(/not enough free space for the MP4: it needs about 106 MiB and 64 MiB must stay free for live sessions \(STORAGE_MIN_FREE_MB\), but only 170 MiB are free/);
  });

  it("recognizes ffmpeg's full-disk failure", () => {
    expect(saysNoSpace(["[mp4 @ 0x55] Error writing trailer of /r/output.mp4.tmp: No space left on device"])).toBe(true);
    expect(saysNoSpace(["Invalid data found when processing input"])).toBe(false);
  });
});
