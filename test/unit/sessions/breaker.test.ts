import { BREAKER_FAILURES, BREAKER_OPEN_MS, PipelineBreaker } from "../../../src/sessions/breaker";

describe("PipelineBreaker", () => {
  it(`opens after ${BREAKER_FAILURES} failures within its window, and closes after ${BREAKER_OPEN_MS / 1000} s`, () => {
    const b = new PipelineBreaker();
    b.failed("s", 0);
    b.failed("s", 30_000);
    expect(b.refusal("s", 31_000)).toBeUndefined();
    b.failed("s", 60_000);
    expect(b.refusal("s", 61_000)).toMatch(/failed 3 times in 2 minutes: publishes are refused for 59 s more/);
    expect(b.refusal("other", 61_000)).toBeUndefined();
    expect(b.refusal("s", 60_000 + BREAKER_OPEN_MS)).toBeUndefined();
  });
  it("failures spread over more than the window do not open it", () => {
    const b = new PipelineBreaker();
    for (const at of [0, 70_000, 140_000]) b.failed("s", at);
    expect(b.refusal("s", 141_000)).toBeUndefined();
  });
});
