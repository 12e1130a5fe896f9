import { QuestionBudget, type QuestionBounds } from "../../../src/playback/questionBudget";

// The bounds on webhook questions, with the clock in the test's hands: questions in flight and
// new questions a second, per playback id and per node, and when to try again.

const BOUNDS: QuestionBounds = { perPlaybackInFlight: 3, perPlaybackRate: 2, nodeInFlight: 5, nodeRate: 10 };

type Step = ["take", string, number, true | number] | ["done", string];

describe("QuestionBudget", () => {
  it.each<[string, Step[]]>([
    [
      "a burst of twice the rate per playback id, then one a second per half of it",
      // 4 taken at once (burst 2 × 2/s), each answered at once; the 5th waits half a second.
      [["take", "a", 0, true], ["done", "a"], ["take", "a", 0, true], ["done", "a"], ["take", "a", 0, true], ["done", "a"], ["take", "a", 0, true], ["done", "a"], ["take", "a", 0, 1], ["take", "a", 499, 1], ["take", "a", 500, true]],
    ],
    ["in flight per playback id: the 4th waits for an answer", [["take", "a", 0, true], ["take", "a", 0, true], ["take", "a", 0, true], ["take", "a", 0, 1], ["done", "a"], ["take", "a", 0, true]]],
    [
      "in flight per node: playback ids share it",
      [["take", "a", 0, true], ["take", "a", 0, true], ["take", "b", 0, true], ["take", "b", 0, true], ["take", "c", 0, true], ["take", "d", 0, 1], ["done", "c"], ["take", "d", 0, true]],
    ],
    [
      "the node's rate: 20 at once across ids, then a wait the clock can say",
      [
        ...Array.from({ length: 10 }, (_, i): Step[] => [["take", `p${i}`, 0, true], ["done", `p${i}`], ["take", `p${i}`, 0, true], ["done", `p${i}`]]).flat(),
        ["take", "q", 0, 1],
        ["take", "q", 100, true],
      ],
    ],
  ])("%s", (_name, steps) => {
    const budget = new QuestionBudget(BOUNDS, 0);
    for (const step of steps) {
      if (step[0] === "done") budget.done(step[1]);
      else {
        const slot = budget.take(step[1], step[2]);
        expect([step, slot]).toEqual([step, step[3] === true ? { ok: true } : { ok: false, retryAfterSeconds: step[3] }]);
      }
    }
  });

  it("says how many seconds a slow rate needs", () => {
    const budget = new QuestionBudget({ perPlaybackInFlight: 10, perPlaybackRate: 0.25, nodeInFlight: 10, nodeRate: 100 }, 0);
    // A burst of 0.5: no whole question; one needs 4 s of 0.25 a second, less the half held.
    expect(budget.take("a", 0)).toEqual({ ok: false, retryAfterSeconds: 2 });
  });

  it("gives the room back once per answer, never below nothing", () => {
    const budget = new QuestionBudget(BOUNDS, 0);
    budget.take("a", 0);
    expect(budget.inFlight).toBe(1);
    budget.done("a");
    budget.done("a");
    expect(budget.inFlight).toBe(0);
  });
});
