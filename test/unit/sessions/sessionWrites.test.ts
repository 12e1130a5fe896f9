import { LeaseLost, type Lease } from "../../../src/db";
import type { Logger } from "../../../src/log";
import { realClock } from "../../../src/sessions/clock";
import { activeRowsAtEnd, SessionWrites, type SessionWritesDeps } from "../../../src/sessions/sessionWrites";

// What a live session writes: which rows its end clears, and a failed write that neither
// throws nor hides why it failed.

const lease: Lease = { nodeId: "node-1", streamId: "stream-1", epoch: 3 };

function writes() {
  const seen = { abandoned: [] as string[], storageChecks: 0, errors: [] as string[] };
  const log = { error: (_: unknown, msg: string) => seen.errors.push(msg) } as unknown as Logger;
  const deps: SessionWritesDeps = {
    store: {} as SessionWritesDeps["store"],
    events: {} as SessionWritesDeps["events"],
    log,
    clock: realClock,
    lease,
    streamId: "stream-1",
    sessionId: "session-1",
    storageProblem: () => void seen.storageChecks++,
    streamTakenOver: () => false,
    leaseLost: () => false,
    abandon: (why) => void seen.abandoned.push(why),
  };
  return { w: new SessionWrites(deps), seen };
}

describe("a live session's writes", () => {
  it.each([
    // The end clears the parent stream's isActive too, unless a successor session is live on it.
    [false, ["stream-1", "session-1"]],
    [true, ["session-1"]],
  ] as const)("activeRowsAtEnd(taken over %s)", (takenOver, expected) => {
    expect(activeRowsAtEnd("stream-1", "session-1", takenOver)).toEqual(expected);
  });

  it.each([
    ["written", () => Promise.resolve(), true, { abandoned: [], storageChecks: 0, errors: [] }],
    ["the lease taken: the session is abandoned", () => Promise.reject(new LeaseLost(lease)), false, { abandoned: ["going live found the lease taken"], storageChecks: 0, errors: [] }],
    ["the disk full: logged, storage checked", () => Promise.reject(new Error("SQLITE_FULL")), false, { abandoned: [], storageChecks: 1, errors: ["could not record live session state"] }],
  ] as const)("write: %s", async (_, write, expected, seenAfter) => {
    const { w, seen } = writes();
    await expect(w.write("going live", write)).resolves.toBe(expected);
    expect(seen).toEqual(seenAfter);
  });
});
