import type { HlsSegment } from "./track";

// Blocking playlist reload (RFC 8216bis §6.2.5.2): `_HLS_msn=M[&_HLS_part=P]` asks for a
// playlist that holds segment M (part P of it). Pure: the query in, a decision out.

export interface BlockingRequest {
  msn: number;
  part?: number;
}

export type BlockingQuery = { ok: true; request?: BlockingRequest } | { ok: false; error: string };

const INTEGER = /^\d{1,15}$/;

/** The delivery directives of a playlist request; none: answer at once. */
export function parseBlockingQuery(query: Record<string, unknown>): BlockingQuery {
  const msn = query["_HLS_msn"];
  const part = query["_HLS_part"];
  if (msn === undefined) {
    return part === undefined ? { ok: true } : { ok: false, error: "_HLS_part needs _HLS_msn (RFC 8216bis 6.2.5.2)" };
  }
  if (typeof msn !== "string" || !INTEGER.test(msn)) return { ok: false, error: "_HLS_msn must be a non-negative integer" };
  if (part !== undefined && (typeof part !== "string" || !INTEGER.test(part))) return { ok: false, error: "_HLS_part must be a non-negative integer" };
  return { ok: true, request: { msn: Number(msn), ...(part !== undefined ? { part: Number(part) } : {}) } };
}

/** What a blocking request waits on. */
export interface BlockingSource {
  readonly lastCompleteMsn: number;
  readonly openSegment: HlsSegment | undefined;
  readonly ended: boolean;
  segment(msn: number): HlsSegment | undefined;
}

/**
 * A request for a segment more than two past the last complete one cannot be meant for this
 * playlist: 400 at once rather than a wait.
 */
export const tooFarAhead = (src: BlockingSource, r: BlockingRequest) => r.msn > src.lastCompleteMsn + 2;

/** Whether the playlist now holds what the request asks for (an ended playlist holds all it ever will). */
export function satisfies(src: BlockingSource, r: BlockingRequest): boolean {
  if (src.ended) return true;
  if (r.part === undefined) return src.lastCompleteMsn >= r.msn;
  if (r.msn <= src.lastCompleteMsn) {
    // A segment already gone from memory was listed once: what the player asks is past it.
    const seg = src.segment(r.msn);
    if (!seg || r.part < seg.parts.length) return true;
    // A part index past the end of a complete segment is the next segment's first part.
    return satisfies(src, { msn: r.msn + 1, part: 0 });
  }
  const open = src.openSegment;
  return open !== undefined && open.msn === r.msn && open.parts.length > r.part;
}

/** How many LL-HLS requests may be held open (blocking reloads, preload-hint parts). */
export interface BlockingWaitCaps {
  perPlayback: number;
  perClient: number;
  perNode: number;
}

/**
 * The requests held open now, per playback id and per client address: each costs a socket and
 * about 20 KB, and 10,000 of them once took a node from 278 to 499 MB and past its health
 * probes. `enter` counts one in if every cap has room; `leave` counts it out. Maps hold only
 * what is waiting now.
 */
export class BlockingWaits {
  private readonly byPlayback = new Map<string, number>();
  private readonly byClient = new Map<string, number>();
  private all = 0;

  constructor(private readonly caps: BlockingWaitCaps) {}

  /** Counts a wait in, or (false) says a cap is reached: the caller answers 503. No `client`: not counted per client. */
  enter(playbackId: string, client: string | undefined): boolean {
    const mine = this.byPlayback.get(playbackId) ?? 0;
    const theirs = client === undefined ? 0 : (this.byClient.get(client) ?? 0);
    if (this.all >= this.caps.perNode || mine >= this.caps.perPlayback || theirs >= this.caps.perClient) return false;
    this.byPlayback.set(playbackId, mine + 1);
    if (client !== undefined) this.byClient.set(client, theirs + 1);
    this.all++;
    return true;
  }

  /** A wait `enter` let in is over (answered, timed out or abandoned). */
  leave(playbackId: string, client: string | undefined): void {
    decrement(this.byPlayback, playbackId);
    if (client !== undefined) decrement(this.byClient, client);
    if (this.all > 0) this.all--;
  }

  /** Requests held open now. */
  get waiting(): number {
    return this.all;
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = counts.get(key);
  if (n === undefined) return;
  if (n <= 1) counts.delete(key);
  else counts.set(key, n - 1);
}
