// The API load: SOAK_API_RATE requests a second, open loop (each at its own time, whether or not
// the previous ones have answered), a fixed mix of reads and one write.

import { api, type Onair } from "./server";
import { now, sleep, soakState } from "./runState";
import type { SoakStream } from "./streams";

/** Open-loop API load: beyond this many unanswered requests, new ones are not sent but counted. */
export const API_MAX_IN_FLIGHT = 200;

export type ApiKind = "GET /api/stream/{id}" | "GET /api/stream" | "GET /api/session" | "PATCH /api/stream/{id}";
export const API_KINDS: ApiKind[] = ["GET /api/stream/{id}", "GET /api/stream", "GET /api/session", "PATCH /api/stream/{id}"];
/** Every 20 requests: 9 × GET one stream, 5 × list streams, 5 × list sessions, 1 × PATCH. */
const API_CYCLE: ApiKind[] = (() => {
  const [get, list, sessions, patch] = API_KINDS as [ApiKind, ApiKind, ApiKind, ApiKind];
  return [get, list, get, sessions, get, list, get, sessions, get, list, get, sessions, get, list, get, sessions, get, list, sessions, patch];
})();

export interface ApiSample {
  at: number;
  kind: ApiKind;
  ms: number;
  ok: boolean;
}

export interface ApiLoad {
  samples: ApiSample[];
  /** Slots not sent: too many unanswered requests, or this bench fell more than 1 s behind. */
  notSent: number;
  errors: string[];
  done: Promise<void>;
  stop(): void;
}

export function startApiLoad(o: Onair, streams: SoakStream[], rate: number): ApiLoad {
  let halted = false;
  const load: ApiLoad = { samples: [], notSent: 0, errors: [], done: Promise.resolve(), stop: () => (halted = true) };
  const one = async (i: number) => {
    const kind = API_CYCLE[i % API_CYCLE.length]!;
    const s = streams[Math.floor(i / API_CYCLE.length) % streams.length]!;
    const at = now();
    const call =
      kind === "GET /api/stream/{id}" ? api(o, "GET", `/stream/${s.id}`)
      : kind === "GET /api/stream" ? api(o, "GET", "/stream")
      : kind === "GET /api/session" ? api(o, "GET", "/session")
      : api(o, "PATCH", `/stream/${s.id}`, { name: `soak ${s.index + 1} #${i}` });
    try {
      const res = await call;
      const ok = kind === "PATCH /api/stream/{id}" ? res.status === 204 : res.status === 200;
      if (!ok && load.errors.length < 10) load.errors.push(`${kind}: ${res.status} ${res.body.toString("utf8").slice(0, 200)}`);
      load.samples.push({ at, kind, ms: res.ms, ok });
    } catch (err) {
      if (load.errors.length < 10) load.errors.push(`${kind}: ${err instanceof Error ? err.message : String(err)}`);
      load.samples.push({ at, kind, ms: now() - at, ok: false });
    }
  };
  load.done = (async () => {
    const inFlight = new Set<Promise<void>>();
    const start = now();
    for (let i = 0; !halted && !soakState.stopping; i++) {
      const due = start + (i * 1000) / rate;
      const wait = due - now();
      if (wait > 0) await sleep(wait);
      else if (wait < -1000) {
        load.notSent++;
        continue;
      }
      if (halted || soakState.stopping) break;
      if (inFlight.size >= API_MAX_IN_FLIGHT) {
        load.notSent++;
        continue;
      }
      const p: Promise<void> = one(i).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await Promise.all(inFlight);
  })();
  return load;
}
