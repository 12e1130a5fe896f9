import { BlockingWaits, parseBlockingQuery } from "../../../src/hls/blocking";

// Blocking reload's pure parts: the delivery directives, and the caps on held-open requests.

describe("parseBlockingQuery", () => {
  it.each([
    ["none", {}, { ok: true }],
    ["a segment", { _HLS_msn: "12" }, { ok: true, request: { msn: 12 } }],
    ["a part", { _HLS_msn: "12", _HLS_part: "3" }, { ok: true, request: { msn: 12, part: 3 } }],
    ["a part alone", { _HLS_part: "3" }, { ok: false, error: "_HLS_part needs _HLS_msn (RFC 8216bis 6.2.5.2)" }],
    ["not a number", { _HLS_msn: "x" }, { ok: false, error: "_HLS_msn must be a non-negative integer" }],
    ["twice", { _HLS_msn: ["1", "2"] }, { ok: false, error: "_HLS_msn must be a non-negative integer" }],
  ])("%s", (_name, query, expected) => {
    expect(parseBlockingQuery(query)).toEqual(expected);
  });
});

type Step = ["enter", string, string | undefined, boolean] | ["leave", string, string | undefined] | ["waiting", number];

describe("BlockingWaits", () => {
  const caps = { perPlayback: 3, perClient: 2, perNode: 4 };
  it.each<[string, Step[]]>([
    ["per client address", [["enter", "p", "a", true], ["enter", "p", "a", true], ["enter", "p", "a", false], ["enter", "p", "b", true], ["waiting", 3]]],
    ["per playback id", [["enter", "p", "a", true], ["enter", "p", "b", true], ["enter", "p", "c", true], ["enter", "p", "d", false], ["enter", "q", "d", true]]],
    [
      "per node, and room again as waits end",
      [["enter", "p", "a", true], ["enter", "q", "b", true], ["enter", "r", "c", true], ["enter", "s", "d", true], ["enter", "t", "e", false], ["leave", "p", "a"], ["enter", "t", "e", true], ["waiting", 4]],
    ],
    [
      "a request another node passed on (no client) counts per playback id and node only",
      [["enter", "p", "a", true], ["enter", "p", "a", true], ["enter", "p", undefined, true], ["enter", "p", undefined, false], ["leave", "p", undefined], ["enter", "p", "a", false], ["enter", "p", "b", true]],
    ],
    ["a refused wait counts nothing", [["enter", "p", "a", true], ["enter", "p", "a", true], ["enter", "p", "a", false], ["leave", "p", "a"], ["leave", "p", "a"], ["waiting", 0], ["enter", "p", "a", true]]],
  ])("%s", (_name, steps) => {
    const waits = new BlockingWaits(caps);
    for (const step of steps) {
      if (step[0] === "enter") expect([step, waits.enter(step[1], step[2])]).toEqual([step, step[3]]);
      else if (step[0] === "leave") waits.leave(step[1], step[2]);
      else expect(waits.waiting).toBe(step[1]);
    }
  });
});
