// How many questions a `webhook` playback policy may put to owners' webhooks: each new access
// key costs one signed POST, so anyone who knows a playback id could otherwise make onair send
// the owner one POST per request they send, and queue real viewers' questions behind them (a
// flood of 1,000 made-up keys once had a new viewer refused after 5 s).
//
// Bounded per playback id and per node, both in questions in flight and in new questions a
// second (a token bucket holding two seconds' worth, so a stream going live with a crowd
// waiting lets them in in a burst). A question past a bound is not asked: the viewer is told
// to try again later (503), never refused: only the webhook refuses. Viewers already admitted
// do not go through here at all (see PlaybackGate): their re-checks cannot be crowded out.

export interface QuestionBounds {
  /** Questions about one playback id awaiting their webhook's answer. */
  perPlaybackInFlight: number;
  /** New questions about one playback id a second. */
  perPlaybackRate: number;
  /** Questions awaiting an answer on this node, all webhooks together. */
  nodeInFlight: number;
  /** New questions a second on this node. */
  nodeRate: number;
}

export type QuestionSlot = { ok: true } | { ok: false; retryAfterSeconds: number };

/** A token bucket of `rate` a second holding at most BURST_SECONDS of it, and what runs now. */
interface Budget {
  tokens: number;
  at: number;
  inFlight: number;
}

const BURST_SECONDS = 2;
/** Idle playback ids are forgotten beyond this many (only existing webhook-gated ids get here). */
const MAX_TRACKED = 10_000;

export class QuestionBudget {
  private readonly node: Budget;
  private readonly playbacks = new Map<string, Budget>();

  constructor(private readonly bounds: QuestionBounds, now = Date.now()) {
    this.node = { tokens: bounds.nodeRate * BURST_SECONDS, at: now, inFlight: 0 };
  }

  /** Takes room for one question about `playbackId`, or says how long to wait; `done` gives the room back. */
  take(playbackId: string, now = Date.now()): QuestionSlot {
    const b = this.bounds;
    let mine = this.playbacks.get(playbackId);
    if (!mine) {
      if (this.playbacks.size >= MAX_TRACKED) this.forgetIdle(now);
      mine = { tokens: b.perPlaybackRate * BURST_SECONDS, at: now, inFlight: 0 };
      this.playbacks.set(playbackId, mine);
    }
    refill(this.node, b.nodeRate, now);
    refill(mine, b.perPlaybackRate, now);
    if (mine.inFlight >= b.perPlaybackInFlight || this.node.inFlight >= b.nodeInFlight) return { ok: false, retryAfterSeconds: 1 };
    if (mine.tokens < 1 || this.node.tokens < 1) {
      const wait = Math.max(waitFor(mine, b.perPlaybackRate), waitFor(this.node, b.nodeRate));
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(wait)) };
    }
    mine.tokens--;
    this.node.tokens--;
    mine.inFlight++;
    this.node.inFlight++;
    return { ok: true };
  }

  /** The question `take` made room for has its answer (or failed). */
  done(playbackId: string): void {
    const mine = this.playbacks.get(playbackId);
    if (mine && mine.inFlight > 0) mine.inFlight--;
    if (this.node.inFlight > 0) this.node.inFlight--;
  }

  /** Questions awaiting an answer now (for tests and metrics). */
  get inFlight(): number {
    return this.node.inFlight;
  }

  private forgetIdle(now: number): void {
    for (const [id, budget] of this.playbacks) {
      refill(budget, this.bounds.perPlaybackRate, now);
      if (budget.inFlight === 0 && budget.tokens >= this.bounds.perPlaybackRate * BURST_SECONDS) this.playbacks.delete(id);
    }
  }
}

function refill(b: Budget, rate: number, now: number): void {
  if (now <= b.at) return;
  b.tokens = Math.min(rate * BURST_SECONDS, b.tokens + ((now - b.at) / 1000) * rate);
  b.at = now;
}

/** Seconds until the bucket holds a whole token. */
const waitFor = (b: Budget, rate: number) => (b.tokens >= 1 ? 0 : (1 - b.tokens) / rate);
