import { listenerWanted, type SrtStream } from "../../../../src/ingest/srt/srtIngest";

const IDLE = 60_000;
const NOW = 1_000_000;
const stream: SrtStream = { id: "s", streamKey: "k", suspended: false, srtPort: 9000, srtPassphrase: "p".repeat(24), srtUsedAt: NOW - 1000, pull: null };

describe("which SRT listeners are armed", () => {
  it.each<[string, Partial<SrtStream>, number, boolean]>([
    ["a port asked for lately", {}, 0, true],
    ["a port asked for just under the idle time ago", { srtUsedAt: NOW - IDLE + 1 }, 0, true],
    ["a port idle for the idle time", { srtUsedAt: NOW - IDLE }, 0, false],
    ["an idle port this node saw a caller on lately", { srtUsedAt: NOW - 10 * IDLE }, NOW - 5000, true],
    ["a port never asked for since the upgrade", { srtUsedAt: null }, 0, false],
    ["no port", { srtPort: null }, 0, false],
    ["no passphrase", { srtPassphrase: null }, 0, false],
    ["a suspended stream", { suspended: true }, 0, false],
    ["a stream without a key", { streamKey: null }, 0, false],
    ["a pulled stream", { pull: { source: "rtmp://x/y" } }, 0, false],
  ])("%s", (_name, change, usedHereAt, wanted) => {
    expect(listenerWanted({ ...stream, ...change }, NOW, IDLE, usedHereAt)).toBe(wanted);
  });
});
