import crypto from "node:crypto";
import { DEFAULT_POLICY_REFRESH_SECONDS, isGated, type PlaybackPolicy } from "../shapes";
import { verifyPlaybackJwt, type KeyLookup } from "./jwt";
import type { QuestionBudget } from "./questionBudget";
import { MEDIA_PARAM, mintToken, newViewerId, readToken, SESSION_PARAM, type ViewerToken } from "./tokens";

// Who may fetch what of a playback: the one decision every HLS request of a stream goes through.
// A public stream lets everyone in (its viewers are still named, to be counted). A gated one
// checks the viewer's JWT or access key on every playlist request (the master playlist writes it
// into the URIs of the playlists it names, beside the viewer's session token), and its media by
// short-lived media tokens the playlists write into their media URIs: a copied segment URL stops
// working, a JWT past its `exp` or a disabled key stops the next reload.

/** The stream a playback id names, as far as watching it goes. */
export interface PlaybackSubject {
  playbackId: string;
  userId: string;
  policy: PlaybackPolicy | null;
}

/** What a request shows: query parameters and the `Livepeer-Jwt` header. */
export interface Credentials {
  /** `?jwt=`: carried on into the playlists the answer names. */
  jwt?: unknown;
  /** A `Livepeer-Jwt` header: the player sends it with every request, nothing is carried. */
  jwtHeader?: unknown;
  accessKey?: unknown;
  session?: unknown;
  media?: unknown;
}

/** Viewers seen lately (src/playback/viewers.ts): counted, never asked who may watch. */
export interface ViewerLog {
  seen(playbackId: string, viewerId: string): void;
  /** Asked for a playlist within the viewer window: a player still watching. */
  watching(playbackId: string, viewerId: string): boolean;
}

/** Asks a `webhook` policy's webhook about an access key: true admits, false refuses, undefined: no answer came. */
export type WebhookQuestion = (subject: PlaybackSubject & { policy: Extract<PlaybackPolicy, { type: "webhook" }> }, accessKey: string) => Promise<boolean | undefined>;

export interface GateOptions {
  /** Signs viewer tokens (RecordingUrlSigner.deriveKey). */
  key: Buffer;
  findKey: KeyLookup;
  askWebhook: WebhookQuestion;
  viewers: ViewerLog;
  /** Lifetime of a media token (PLAYBACK_TOKEN_SECONDS): between this and twice this. */
  tokenSeconds: number;
  /** Lifetime of a session token (PLAYBACK_SESSION_SECONDS); 4 hours when unsaid. */
  sessionSeconds?: number;
  /** Bounds on new `webhook` policy questions; none: every new access key is asked at once. */
  questions?: QuestionBudget;
  /** A JWT signed with this key opened a playback (the key's lastSeen). */
  keyUsed?: (keyId: string) => void;
  now?: () => number;
}

/** 401: the credential is missing or was refused. 503: it could not be checked now (try again after retryAfterSeconds). */
export type Refusal = { ok: false; status: 401 | 503; error: string; retryAfterSeconds?: number };

const refuse = (error: string): Refusal => ({ ok: false, status: 401, error });
const busy = (retryAfterSeconds: number): Refusal => ({
  ok: false,
  status: 503,
  error: `too many new viewers of this stream are being checked with its owner's webhook: retry in ${retryAfterSeconds} s`,
  retryAfterSeconds,
});
const text = (v: unknown) => (typeof v === "string" && v.length > 0 && v.length <= 8192 ? v : undefined);

/** Verdicts kept this long: a player's burst of requests costs one check; a disabled key takes effect within it. */
const VERDICT_CACHE_MS = 5000;
const VERDICT_CACHE_MAX = 10_000;
export const DEFAULT_SESSION_SECONDS = 4 * 3600;

/** `unanswered`: nobody said no (a webhook that did not answer): not remembered, and a 503 rather than a 401. */
type Decision = { ok: true } | { ok: false; error: string; unanswered?: true };

interface Verdict {
  /** Fresh until then. */
  until: number;
  /** A promise while asked. */
  verdict: Promise<Decision>;
  /** The answer was yes: a viewer who was let in. */
  admitted: boolean;
  /** An admitted verdict past `until` still answers (while it is asked again) until then. */
  staleUntil: number;
  refreshing: boolean;
}

/** Who asks about a `webhook` policy's access key: new keys are bounded, known ones are not. */
interface Asker {
  playbackId: string;
  /** Shown with a session token bound to this key: the webhook let this key in before. */
  known: boolean;
}

/** Query strings a viewer's playlist writes into its URIs. */
export interface UriQueries {
  /** For the playlists it names (variants, renditions, rendition reports). */
  playlist?: string;
  /** For its segments, parts, init and hinted parts. */
  media?: string;
}

export class PlaybackGate {
  private readonly now: () => number;
  /** sha256 of `jwt:<playbackId>:<token>` or `key:<playbackId>:<accessKey>` → until when, and the verdict (a promise while asked). */
  private readonly verdicts = new Map<string, Verdict>();
  private readonly sessionSeconds: number;

  constructor(private readonly o: GateOptions) {
    this.now = o.now ?? Date.now;
    this.sessionSeconds = o.sessionSeconds ?? DEFAULT_SESSION_SECONDS;
  }

  /**
   * The master playlist: a viewer's session begins, named by a session token (kept if the
   * request carries one). The variant URIs carry it, and the viewer's `?jwt=`/`?accessKey=`.
   */
  async open(subject: PlaybackSubject, c: Credentials): Promise<({ ok: true } & UriQueries) | Refusal> {
    const session = this.session(subject, c);
    if (isGated(subject.policy)) {
      const admitted = await this.admit(subject, c, session);
      if (!admitted.ok) return admitted;
    }
    return { ok: true, playlist: this.playlistQuery(subject, c, session?.viewerId ?? newViewerId()) };
  }

  /**
   * A media playlist: a gated stream's is checked again (a JWT past its exp, a disabled key, a
   * webhook's changed mind end the session here) and names its media with a media token; then
   * its viewer counts (never before: a refused request counts nobody).
   */
  async playlist(subject: PlaybackSubject, c: Credentials): Promise<({ ok: true } & UriQueries) | Refusal> {
    const session = this.session(subject, c);
    if (!isGated(subject.policy)) {
      if (session) this.o.viewers.seen(subject.playbackId, session.viewerId);
      return { ok: true };
    }
    const admitted = await this.admit(subject, c, session);
    if (!admitted.ok) return admitted;
    if (session) this.o.viewers.seen(subject.playbackId, session.viewerId);
    const viewerId = session?.viewerId ?? newViewerId();
    return { ok: true, playlist: this.playlistQuery(subject, c, viewerId), media: `${MEDIA_PARAM}=${this.mediaToken(subject, viewerId)}` };
  }

  /** A segment, part, init or thumbnail. */
  async media(subject: PlaybackSubject, c: Credentials): Promise<{ ok: true } | Refusal> {
    if (!isGated(subject.policy)) return { ok: true };
    const m = readToken(this.o.key, "m", subject.playbackId, c.media);
    if (m && m.expires * 1000 >= this.now()) return { ok: true };
    if (m && c.jwt === undefined && c.jwtHeader === undefined && c.accessKey === undefined) return refuse("the media token has expired: reload the playlist");
    return this.admit(subject, c);
  }

  /**
   * A session token of this playback with a good signature (on a `webhook` stream, bound to the
   * access key shown), honoured until it expires, and past that while its viewer keeps watching.
   * Players reload the variant URL the master gave them, never a newer one, so a token cannot be
   * renewed in the player's hands: a viewer reloading every second or two stays known for as
   * long as it watches, while a token picked up once and shown again later, after a pause
   * longer than the viewer window, names nobody (no count; on a webhook stream, no standing as
   * a viewer already let in). Absent or not honoured, a master playlist names a new viewer.
   */
  private session(subject: PlaybackSubject, c: Credentials): ViewerToken | undefined {
    const t = readToken(this.o.key, "s", subject.playbackId, c.session, boundTo(subject, c));
    if (!t) return undefined;
    return t.expires * 1000 >= this.now() || this.o.viewers.watching(subject.playbackId, t.viewerId) ? t : undefined;
  }

  /**
   * When a session token minted now expires: the session lifetime on, rounded up to the hour (to
   * the lifetime when shorter), so the URIs of one viewer's playlists stay the same reload after
   * reload for an hour at a time.
   */
  private sessionExpiry(): number {
    const step = Math.min(3600, this.sessionSeconds);
    return Math.ceil((this.now() / 1000 + this.sessionSeconds) / step) * step;
  }

  /** What the playlists a viewer is given carry: its session token, and the credential it showed in the query. */
  private playlistQuery(subject: PlaybackSubject, c: Credentials, viewerId: string): string {
    const session = mintToken(this.o.key, "s", subject.playbackId, { viewerId, expires: this.sessionExpiry() }, boundTo(subject, c));
    const q = new URLSearchParams({ [SESSION_PARAM]: session });
    // A credential shown in a header too: Livepeer's player sends Livepeer-Jwt and
    // Livepeer-Access-Key with the master playlist's request only, never the variants'.
    const jwt = text(c.jwtHeader) ?? text(c.jwt); // the one admit() checked
    const accessKey = webhookKey(c);
    if (subject.policy?.type === "jwt" && jwt) q.set("jwt", jwt);
    if (subject.policy?.type === "webhook" && accessKey) q.set("accessKey", accessKey);
    return q.toString();
  }

  /**
   * A media token: the same for a viewer during one period of tokenSeconds (so a playlist's URIs
   * stay the same from one reload to the next, as RFC 8216 asks, and a hinted part keeps its
   * URI when it is listed), valid until the end of the next period.
   */
  private mediaToken(subject: PlaybackSubject, viewerId: string): string {
    const period = this.o.tokenSeconds;
    const expires = (Math.floor(this.now() / 1000 / period) + 2) * period;
    return mintToken(this.o.key, "m", subject.playbackId, { viewerId, expires });
  }

  /**
   * The policy's own check: a JWT, or the webhook's word on an access key. `session`: the
   * request's session token, as honoured (on a webhook stream, bound to this access key).
   */
  private async admit(subject: PlaybackSubject, c: Credentials, session?: ViewerToken): Promise<{ ok: true } | Refusal> {
    const policy = subject.policy;
    if (policy?.type === "jwt") {
      const jwt = text(c.jwtHeader) ?? text(c.jwt);
      if (!jwt) return refuse("this stream needs a playback JWT: add ?jwt=<token> or a Livepeer-Jwt header");
      return this.cached(`jwt:${subject.playbackId}:${jwt}`, VERDICT_CACHE_MS, async () => {
        const v = await verifyPlaybackJwt(jwt, subject.playbackId, subject.userId, this.o.findKey, new Date(this.now()));
        if (v.ok) this.o.keyUsed?.(v.keyId);
        return v.ok ? { ok: true } : { ok: false, error: v.reason };
      });
    }
    if (policy?.type === "webhook") {
      const accessKey = webhookKey(c);
      if (!accessKey) return refuse("this stream needs an access key: add ?accessKey=<key>");
      const keepMs = (policy.refreshInterval ?? DEFAULT_POLICY_REFRESH_SECONDS) * 1000;
      const ask = async (): Promise<Decision> => {
        const said = await this.o.askWebhook({ ...subject, policy }, accessKey);
        if (said === undefined) return { ok: false, error: "the stream owner's webhook did not answer: retry in 2 s", unanswered: true };
        return said ? { ok: true } : { ok: false, error: "the stream owner's webhook did not admit this access key" };
      };
      return this.cached(`key:${subject.playbackId}:${accessKey}`, keepMs, ask, { playbackId: subject.playbackId, known: session !== undefined });
    }
    return { ok: true };
  }

  /**
   * One check per credential at a time: parallel requests showing the same new JWT or access key
   * wait on one verification or one webhook question. Keyed by a hash: a flood of 8 KiB tokens
   * costs 32 bytes each.
   *
   * A webhook question (`asker`) about a new access key is asked only within the budget (else
   * 503, try later). A viewer already let in never waits behind new keys: its verdict, once due
   * to be asked again, still answers while the question is out (so the webhook changing its
   * mind takes effect a request later), and a key its session token proves was let in is asked
   * outside the budget.
   */
  private async cached(what: string, keepMs: number, decide: () => Promise<Decision>, asker?: Asker): Promise<{ ok: true } | Refusal> {
    const key = crypto.createHash("sha256").update(what).digest("base64url");
    const now = this.now();
    const entry = this.verdicts.get(key);
    if (entry && entry.until >= now) return answer(await entry.verdict);
    if (entry?.admitted && entry.staleUntil >= now) {
      if (!entry.refreshing) this.refresh(key, entry, keepMs, decide);
      return { ok: true };
    }
    if (asker && !asker.known && !entry?.admitted && this.o.questions) {
      const budget = this.o.questions;
      const slot = budget.take(asker.playbackId, now);
      if (!slot.ok) return busy(slot.retryAfterSeconds);
      const inner = decide;
      decide = () => inner().finally(() => budget.done(asker.playbackId));
    }
    // A JWT is checked here, at once: its verdict has no grace past its 5 s.
    return answer(await this.remember(key, now, keepMs, asker ? keepMs : 0, decide()).verdict);
  }

  /** A verdict being decided, kept; a failed check (the database, a bug) is not remembered: the next request asks again. */
  private remember(key: string, now: number, keepMs: number, graceMs: number, decision: Promise<Decision>): Verdict {
    if (this.verdicts.size >= VERDICT_CACHE_MAX) this.prune(now);
    const entry: Verdict = { until: now + keepMs, staleUntil: now + keepMs + graceMs, admitted: false, refreshing: false, verdict: decision };
    entry.verdict = decision.then(
      (v) => {
        entry.admitted = v.ok;
        // A refusal is kept briefly whatever the policy says: a viewer let in later is not kept out long.
        if (!v.ok) entry.until = v.unanswered ? now - 1 : Math.min(entry.until, now + VERDICT_CACHE_MS);
        return v;
      },
      (err: unknown) => {
        if (this.verdicts.get(key) === entry) this.verdicts.delete(key);
        throw err;
      },
    );
    this.verdicts.set(key, entry);
    return entry;
  }

  /** Asks again about a viewer let in, who goes on watching meanwhile; the answer replaces the verdict. */
  private refresh(key: string, stale: Verdict, keepMs: number, decide: () => Promise<Decision>): void {
    stale.refreshing = true;
    const fresh = this.remember(key, this.now(), keepMs, keepMs, decide());
    // Until the answer is in, the stale verdict answers (it stays in the map under the same key).
    this.verdicts.set(key, stale);
    fresh.verdict.then(
      (v) => {
        // No answer is no change of mind: the viewer goes on, and the next request asks again.
        if (!v.ok && v.unanswered) stale.refreshing = false;
        else if (this.verdicts.get(key) === stale) {
          // To the end of the map: a full cache forgets the viewers let in longest ago first.
          this.verdicts.delete(key);
          this.verdicts.set(key, fresh);
        }
      },
      () => {
        stale.refreshing = false;
      },
    );
  }

  /**
   * A full cache forgets refusals, questions still out and admitted verdicts gone stale first;
   * viewers let in are forgotten last, the oldest first, only when they alone fill it. Each
   * pass leaves a quarter of the cache free, so passes are rare under a flood.
   */
  private prune(now: number): void {
    for (const [k, v] of this.verdicts) if (!v.admitted || v.staleUntil < now) this.verdicts.delete(k);
    if (this.verdicts.size < (VERDICT_CACHE_MAX * 3) / 4) return;
    for (const k of this.verdicts.keys()) {
      if (this.verdicts.size <= VERDICT_CACHE_MAX / 2) break;
      this.verdicts.delete(k);
    }
  }
}

const answer = (v: Decision): { ok: true } | Refusal => (v.ok ? { ok: true } : v.unanswered ? { ok: false, status: 503, error: v.error, retryAfterSeconds: 2 } : refuse(v.error));

/** The access key of a `webhook` policy's viewer: `?accessKey=`, or (as Livepeer players send it) in the JWT's place. */
const webhookKey = (c: Credentials) => text(c.accessKey) ?? text(c.jwtHeader) ?? text(c.jwt);

/** What a session token is bound to: on a `webhook` stream, the access key shown (see tokens.ts). */
const boundTo = (subject: PlaybackSubject, c: Credentials) => (subject.policy?.type === "webhook" ? webhookKey(c) : undefined);
