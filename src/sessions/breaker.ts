// A stream whose pipeline keeps failing (a source ffmpeg cannot decode, a bug in a filter)
// would otherwise loop for ever: OBS reconnects, a new session starts, fails, ends. After
// FAILURES sessions ending in pipeline failure within WINDOW_MS, its publishes are refused for
// OPEN_MS with the reason, so the broadcaster sees why and the server stops paying for it.

export const BREAKER_FAILURES = 3;
export const BREAKER_WINDOW_MS = 120_000;
export const BREAKER_OPEN_MS = 60_000;

export class PipelineBreaker {
  private readonly failures = new Map<string, number[]>();

  failed(streamId: string, at: number): void {
    const recent = (this.failures.get(streamId) ?? []).filter((t) => at - t < BREAKER_WINDOW_MS);
    recent.push(at);
    this.failures.set(streamId, recent);
  }

  /** Why a publish of the stream is refused now; undefined when it may go on. */
  refusal(streamId: string, now: number): string | undefined {
    const recent = (this.failures.get(streamId) ?? []).filter((t) => now - t < BREAKER_WINDOW_MS);
    if (recent.length === 0) this.failures.delete(streamId);
    if (recent.length < BREAKER_FAILURES) return undefined;
    const openUntil = recent[recent.length - 1]! + BREAKER_OPEN_MS;
    if (now >= openUntil) return undefined;
    return `the stream's pipeline failed ${recent.length} times in ${BREAKER_WINDOW_MS / 60_000} minutes: publishes are refused for ${Math.ceil((openUntil - now) / 1000)} s more (check the encoder's output, or the server log)`;
  }
}
