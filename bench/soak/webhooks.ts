// The webhook receiver's side: every event once, correctly signed, and each session's
// stream.started matched by its stream.idle.

import { verifySignature } from "../../src/webhooks";
import type { Receiver } from "../../test/helpers/receiver";

/** The shared secret of the soak's webhook: every delivery must carry a signature made with it. */
export const WEBHOOK_SECRET = "soak-bench-secret";

export interface EventsVerdict {
  byEvent: Map<string, number>;
  deliveries: number;
  duplicates: number;
  badSignatures: number;
  sessionsStarted: number;
  /** Sessions with stream.started but no stream.idle, or the other way round, or either twice. */
  unmatched: string[];
  delayMs: number[];
}

export function judgeEvents(receiver: Receiver): EventsVerdict {
  const byEvent = new Map<string, number>();
  const ids = new Set<string>();
  let duplicates = 0;
  let badSignatures = 0;
  const perSession = new Map<string, { started: number; idle: number }>();
  const delayMs: number[] = [];
  for (const r of receiver.received) {
    const body = r.body as { id?: string; event?: string; createdAt?: number; payload?: { sessionId?: string } } | undefined;
    const event = body?.event ?? "(unreadable)";
    byEvent.set(event, (byEvent.get(event) ?? 0) + 1);
    if (body?.id !== undefined) {
      if (ids.has(body.id)) duplicates++;
      ids.add(body.id);
    }
    const header = r.headers["livepeer-signature"];
    if (typeof header !== "string" || !verifySignature(r.raw, header, WEBHOOK_SECRET)) badSignatures++;
    if (typeof body?.createdAt === "number") delayMs.push(performance.timeOrigin + r.at - body.createdAt);
    const sessionId = body?.payload?.sessionId;
    if (sessionId && (event === "stream.started" || event === "stream.idle")) {
      const x = perSession.get(sessionId) ?? { started: 0, idle: 0 };
      if (event === "stream.started") x.started++;
      else x.idle++;
      perSession.set(sessionId, x);
    }
  }
  const unmatched = [...perSession.entries()]
    .filter(([, x]) => x.started !== 1 || x.idle !== 1)
    .map(([id, x]) => `session ${id.slice(0, 8)}: ${x.started} × stream.started, ${x.idle} × stream.idle`);
  const sessionsStarted = [...perSession.values()].filter((x) => x.started > 0).length;
  return { byEvent, deliveries: receiver.received.length, duplicates, badSignatures, sessionsStarted, unmatched, delayMs };
}

/** Every session that started has ended, each event once: what the bench waits for at the end. */
export const allSessionsMatched = (r: Receiver) => {
  const v = judgeEvents(r);
  return v.sessionsStarted > 0 && v.unmatched.length === 0;
};
