// The soak's clock and its two switches, which the publishers, the readers and the API load check.

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
export const now = () => performance.now();

export const soakState = {
  /** Set when the publishers leave or the bench is interrupted: no more reconnects, no more load. */
  stopping: false,
  /** Set at the end of the soak period: the readers stop (the publishers are still connected). */
  readersDone: false,
};

/** A sleep that ends early when `over()` turns true (by default: the bench is stopping). */
export async function pause(ms: number, over: () => boolean = () => soakState.stopping): Promise<void> {
  const until = now() + ms;
  while (!over() && now() < until) await sleep(Math.min(250, until - now()));
}
