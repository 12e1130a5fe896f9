import { describeEnd, describeExit, refusalFor } from "../../../src/sessions/endReason";

describe("why a session ended, as its row, its log and its publisher hear it", () => {
  it.each([
    ["publisher left", undefined, "publisher left"],
    ["pipeline failed", "ffmpeg exited with code 1", "pipeline failed: ffmpeg exited with code 1"],
    ["lease lost", "its lease (epoch 3) was taken while this node was away", "lease lost: its lease (epoch 3) was taken while this node was away"],
  ] as const)("describeEnd(%s)", (reason, detail, expected) => {
    expect(describeEnd(reason, detail)).toBe(expected);
  });

  it.each([
    ["suspended", undefined, "stream s1 is suspended"],
    ["deleted", undefined, "stream s1 was deleted"],
    ["publisher left", undefined, undefined],
    ["media refused", "hevc", undefined],
    // Paths and SQL stay in the session's endReason and the log.
    ["storage unavailable", "ENOSPC /var/lib/onair/hls", "storage unavailable on the server: reconnect later"],
    ["internal error", "SQLITE_CORRUPT", "internal error on the server: reconnect later"],
    ["terminated", undefined, "terminated"],
    ["lease lost", "taken", "lease lost: taken"],
  ] as const)("refusalFor(%s, %s)", (reason, detail, expected) => {
    expect(refusalFor(reason, detail, "s1")?.reason).toBe(expected);
  });

  it.each([
    [{ code: 0, signal: null }, 0, "ffmpeg's input ended under a live publisher (it fell too far behind and was cut off)"],
    [{ code: 1, signal: null }, 1, "ffmpeg exited with code 1 after 1 restart"],
    [{ code: null, signal: "SIGKILL" }, 3, "ffmpeg was killed by SIGKILL after 3 restarts"],
  ] as const)("describeExit(%o, %i)", (end, restarts, expected) => {
    expect(describeExit(end as Parameters<typeof describeExit>[0], restarts)).toBe(expected);
  });
});
