// Turns between owners where the queue itself is first in, first out (BullMQ): each job gets a
// priority equal to its rank among its owner's recent jobs, so the first job of every owner
// runs before the second of any, and so on. A user whose event went to 20,000 webhooks gets
// ranks 1..20,000; another user's one delivery, relayed just after, gets rank 1 and runs next.

/** BullMQ's largest priority. */
export const MAX_PRIORITY = 2 ** 21;

export class OwnerTurns {
  private readonly ranks = new Map<string, { count: number; since: number }>();

  /** `windowMs`: an owner quiet for this long starts again at rank 1. */
  constructor(private readonly windowMs = 60_000) {}

  /** The priority (1 = first) of the owner's next job, relayed at `now`. */
  next(owner: string, now: number): number {
    let r = this.ranks.get(owner);
    if (!r || now - r.since > this.windowMs) {
      r = { count: 0, since: now };
      this.ranks.set(owner, r);
    }
    r.since = now;
    r.count++;
    if (this.ranks.size > 10_000) this.forgetQuiet(now);
    return Math.min(r.count, MAX_PRIORITY);
  }

  private forgetQuiet(now: number): void {
    for (const [owner, r] of this.ranks) if (now - r.since > this.windowMs) this.ranks.delete(owner);
  }
}
