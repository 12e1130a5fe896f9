import crypto from "node:crypto";
import { DEFAULT_POLICY_REFRESH_SECONDS, isGated, type PlaybackPolicy } from "../shapes";
import { verifyPlaybackJwt, type KeyLookup } from "./jwt";
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

/** Viewers seen lately (src/playback/viewers.ts): counted only, never asked who may watch. */
export interface ViewerLog {
  seen(playbackId: string, viewerId: string): void;
}

/** Asks a `webhook` policy's webhook about an access key: true admits. */
export type WebhookQuestion = (subject: PlaybackSubject & { policy: Extract<PlaybackPolicy, { type: "webhook" }> }, accessKey: string) => Promise<boolean>;

export interface GateOptions {
  /** Signs viewer tokens (RecordingUrlSigner.deriveKey). */
  key: Buffer;
  findKey: KeyLookup;
  askWebhook: WebhookQuestion;
  viewers: ViewerLog;
  /** Lifetime of a media token (PLAYBACK_TOKEN_SECONDS): between this and twice this. */
  tokenSeconds: number;
  /** A JWT signed with this key opened a playback (the key's lastSeen). */
  keyUsed?: (keyId: string) => void;
  now?: () => number;
}

export type Refusal = { ok: false; status: 401; error: string };

const refuse = (error: string): Refusal => ({ ok: false, status: 401, error });
const text = (v: unknown) => (typeof v === "string" && v.length > 0 && v.length <= 8192 ? v : undefined);

/** Verdicts kept this long: a player's burst of requests costs one check; a disabled key takes effect within it. */
const VERDICT_CACHE_MS = 5000;
const VERDICT_CACHE_MAX = 10_000;

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
  private readonly verdicts = new Map<string, { until: number; verdict: Promise<{ ok: true } | { ok: false; error: string }> }>();

  constructor(private readonly o: GateOptions) {
    this.now = o.now ?? Date.now;
  }

  /**
   * The master playlist: a viewer's session begins, named by a session token (kept if the
   * request carries one). The variant URIs carry it, and the viewer's `?jwt=`/`?accessKey=`.
   */
  async open(subject: PlaybackSubject, c: Credentials): Promise<({ ok: true } & UriQueries) | Refusal> {
    if (isGated(subject.policy)) {
      const admitted = await this.admit(subject, c);
      if (!admitted.ok) return admitted;
    }
    const viewerId = this.session(subject, c.session)?.viewerId ?? newViewerId();
    return { ok: true, playlist: this.playlistQuery(subject, c, viewerId) };
  }

  /**
   * A media playlist: counts its viewer; a gated stream's is checked again (a JWT past its exp,
   * a disabled key, a webhook's changed mind end the session here) and names its media with a
   * media token.
   */
  async playlist(subject: PlaybackSubject, c: Credentials): Promise<({ ok: true } & UriQueries) | Refusal> {
    const session = this.session(subject, c.session);
    if (session) this.o.viewers.seen(subject.playbackId, session.viewerId);
    if (!isGated(subject.policy)) return { ok: true };
    const admitted = await this.admit(subject, c);
    if (!admitted.ok) return admitted;
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

  /** A session token of this playback with a good signature: it names a viewer, nothing more. */
  private session(subject: PlaybackSubject, value: unknown): ViewerToken | undefined {
    return readToken(this.o.key, "s", subject.playbackId, value);
  }

  /** What the playlists a viewer is given carry: its session token, and the credential it showed in the query. */
  private playlistQuery(subject: PlaybackSubject, c: Credentials, viewerId: string): string {
    const q = new URLSearchParams({ [SESSION_PARAM]: mintToken(this.o.key, "s", subject.playbackId, { viewerId, expires: 0 }) });
    const jwt = text(c.jwt);
    const accessKey = text(c.accessKey);
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

  /** The policy's own check: a JWT, or the webhook's word on an access key. */
  private async admit(subject: PlaybackSubject, c: Credentials): Promise<{ ok: true } | Refusal> {
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
      const accessKey = text(c.accessKey) ?? text(c.jwtHeader) ?? text(c.jwt);
      if (!accessKey) return refuse("this stream needs an access key: add ?accessKey=<key>");
      const keepMs = (policy.refreshInterval ?? DEFAULT_POLICY_REFRESH_SECONDS) * 1000;
      return this.cached(`key:${subject.playbackId}:${accessKey}`, keepMs, async () =>
        (await this.o.askWebhook({ ...subject, policy }, accessKey)) ? { ok: true } : { ok: false, error: "the stream owner's webhook did not admit this access key" },
      );
    }
    return { ok: true };
  }

  /**
   * One check per credential at a time: parallel requests showing the same new JWT or access key
   * wait on one verification or one webhook question. Keyed by a hash: a flood of 8 KiB tokens
   * costs 32 bytes each.
   */
  private async cached(what: string, keepMs: number, decide: () => Promise<{ ok: true } | { ok: false; error: string }>): Promise<{ ok: true } | Refusal> {
    const key = crypto.createHash("sha256").update(what).digest("base64url");
    const now = this.now();
    let entry = this.verdicts.get(key);
    if (!entry || entry.until < now) {
      if (this.verdicts.size >= VERDICT_CACHE_MAX) this.prune(now);
      const verdict = decide().catch((err: unknown) => {
        // A failed check (the database, a bug) is not remembered: the next request asks again.
        this.verdicts.delete(key);
        throw err;
      });
      entry = { until: now + keepMs, verdict };
      this.verdicts.set(key, entry);
      // A refusal is kept briefly whatever the policy says: a viewer let in later is not kept out long.
      void verdict.then((v) => {
        if (!v.ok && entry) entry.until = Math.min(entry.until, now + VERDICT_CACHE_MS);
      }, () => {});
    }
    const v = await entry.verdict;
    return v.ok ? { ok: true } : refuse(v.error);
  }

  private prune(now: number): void {
    for (const [k, v] of this.verdicts) if (v.until < now) this.verdicts.delete(k);
    // Still full (a flood of distinct tokens): forget the oldest half.
    if (this.verdicts.size >= VERDICT_CACHE_MAX) [...this.verdicts.keys()].slice(0, VERDICT_CACHE_MAX / 2).forEach((k) => this.verdicts.delete(k));
  }
}
