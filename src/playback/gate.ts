import { DEFAULT_POLICY_REFRESH_SECONDS, isGated, type PlaybackPolicy } from "../shapes";
import { verifyPlaybackJwt, type KeyLookup } from "./jwt";
import { mintToken, newViewerId, readToken, type ViewerToken } from "./tokens";

// Who may fetch what of a playback: the one decision every HLS request of a stream goes through.
// A public stream lets everyone in (its viewers are still named, to be counted); a gated one
// lets a player in with its JWT or access key once, at the master playlist, and from then on by
// the tokens written into the URIs it was given.

/** The stream a playback id names, as far as watching it goes. */
export interface PlaybackSubject {
  playbackId: string;
  userId: string;
  policy: PlaybackPolicy | null;
}

/** What a request shows: query parameters and the `Livepeer-Jwt` header. */
export interface Credentials {
  jwt?: unknown;
  accessKey?: unknown;
  session?: unknown;
  media?: unknown;
}

/** Viewers seen lately (src/playback/viewers.ts). */
export interface ViewerLog {
  seen(playbackId: string, viewerId: string): void;
  /** Seen within the viewer window: a session whose token expired goes on while its player polls. */
  watching(playbackId: string, viewerId: string): boolean;
}

/** Asks a `webhook` policy's webhook about an access key: true admits. */
export type WebhookQuestion = (subject: PlaybackSubject & { policy: Extract<PlaybackPolicy, { type: "webhook" }> }, accessKey: string) => Promise<boolean>;

export interface GateOptions {
  /** Signs viewer tokens (RecordingUrlSigner.deriveKey). */
  key: Buffer;
  findKey: KeyLookup;
  askWebhook: WebhookQuestion;
  viewers: ViewerLog;
  /** Lifetime of a media token, and of a session token before its viewer has been seen (PLAYBACK_TOKEN_SECONDS). */
  tokenSeconds: number;
  now?: () => number;
}

export type Refusal = { ok: false; status: 401; error: string };

const refuse = (error: string): Refusal => ({ ok: false, status: 401, error });
const text = (v: unknown) => (typeof v === "string" && v.length > 0 && v.length <= 8192 ? v : undefined);

/** Verdicts kept this long: a player's burst of requests costs one check; a disabled key takes effect within it. */
const VERDICT_CACHE_MS = 5000;
const VERDICT_CACHE_MAX = 10_000;

export class PlaybackGate {
  private readonly now: () => number;
  /** `jwt:<token>` or `key:<playbackId>:<accessKey>` → until when, and the verdict. */
  private readonly verdicts = new Map<string, { until: number; ok: true } | { until: number; ok: false; error: string }>();

  constructor(private readonly o: GateOptions) {
    this.now = o.now ?? Date.now;
  }

  /**
   * The master playlist: a viewer's session begins (or goes on, with a live session token).
   * The session token goes into the variant URIs.
   */
  async open(subject: PlaybackSubject, c: Credentials): Promise<{ ok: true; session: string } | Refusal> {
    const going = this.liveSession(subject, c.session);
    if (!going && isGated(subject.policy)) {
      const admitted = await this.admit(subject, c);
      if (!admitted.ok) return admitted;
    }
    const viewerId = going?.viewerId ?? newViewerId();
    return { ok: true, session: this.mint("s", subject, viewerId) };
  }

  /**
   * A media playlist: counts its viewer; for a gated stream, what its media URIs carry (a fresh
   * media token, and the session token for the playlists it names).
   */
  async playlist(subject: PlaybackSubject, c: Credentials): Promise<{ ok: true; media?: string; session?: string } | Refusal> {
    const going = this.liveSession(subject, c.session);
    if (going) this.o.viewers.seen(subject.playbackId, going.viewerId);
    if (!isGated(subject.policy)) return { ok: true };
    if (going) return { ok: true, media: this.mint("m", subject, going.viewerId), session: String(c.session) };
    const admitted = await this.admit(subject, c);
    if (!admitted.ok) return admitted;
    // A player showing its JWT on every request (a header) needs no session of ours.
    const viewerId = newViewerId();
    return { ok: true, media: this.mint("m", subject, viewerId), session: this.mint("s", subject, viewerId) };
  }

  /** A segment, part, init or thumbnail. */
  async media(subject: PlaybackSubject, c: Credentials): Promise<{ ok: true } | Refusal> {
    if (!isGated(subject.policy)) return { ok: true };
    const m = readToken(this.o.key, "m", subject.playbackId, c.media);
    if (m && m.expires * 1000 >= this.now()) return { ok: true };
    if (this.liveSession(subject, c.session)) return { ok: true };
    if (m && c.jwt === undefined && c.accessKey === undefined) return refuse("the media token has expired: reload the playlist");
    return this.admit(subject, c);
  }

  /** A session token with a good signature that is fresh, or whose viewer is still polling. */
  private liveSession(subject: PlaybackSubject, value: unknown): ViewerToken | undefined {
    const s = readToken(this.o.key, "s", subject.playbackId, value);
    if (!s) return undefined;
    return s.expires * 1000 >= this.now() || this.o.viewers.watching(subject.playbackId, s.viewerId) ? s : undefined;
  }

  private mint(kind: "s" | "m", subject: PlaybackSubject, viewerId: string): string {
    return mintToken(this.o.key, kind, subject.playbackId, { viewerId, expires: Math.ceil(this.now() / 1000) + this.o.tokenSeconds });
  }

  /** The policy's own check: a JWT, or the webhook's word on an access key. */
  private async admit(subject: PlaybackSubject, c: Credentials): Promise<{ ok: true } | Refusal> {
    const policy = subject.policy;
    if (policy?.type === "jwt") {
      const jwt = text(c.jwt);
      if (!jwt) return refuse("this stream needs a playback JWT: add ?jwt=<token> or a Livepeer-Jwt header");
      return this.cached(`jwt:${subject.playbackId}:${jwt}`, VERDICT_CACHE_MS, async () => {
        const v = await verifyPlaybackJwt(jwt, subject.playbackId, subject.userId, this.o.findKey, new Date(this.now()));
        return v.ok ? { ok: true } : { ok: false, error: v.reason };
      });
    }
    if (policy?.type === "webhook") {
      const accessKey = text(c.accessKey) ?? text(c.jwt);
      if (!accessKey) return refuse("this stream needs an access key: add ?accessKey=<key>");
      const keepMs = (policy.refreshInterval ?? DEFAULT_POLICY_REFRESH_SECONDS) * 1000;
      return this.cached(`key:${subject.playbackId}:${accessKey}`, keepMs, async () =>
        (await this.o.askWebhook({ ...subject, policy }, accessKey)) ? { ok: true } : { ok: false, error: "the stream owner's webhook did not admit this access key" },
      );
    }
    return { ok: true };
  }

  private async cached(key: string, keepMs: number, decide: () => Promise<{ ok: true } | { ok: false; error: string }>): Promise<{ ok: true } | Refusal> {
    const now = this.now();
    let v = this.verdicts.get(key);
    if (!v || v.until < now) {
      const d = await decide();
      // A refusal is kept briefly whatever the policy says: a viewer let in later is not kept out long.
      v = d.ok ? { until: now + keepMs, ok: true } : { until: now + Math.min(keepMs, VERDICT_CACHE_MS), ok: false, error: d.error };
      if (this.verdicts.size >= VERDICT_CACHE_MAX) this.prune(now);
      this.verdicts.set(key, v);
    }
    return v.ok ? { ok: true } : refuse(v.error);
  }

  private prune(now: number): void {
    for (const [k, v] of this.verdicts) if (v.until < now) this.verdicts.delete(k);
    // Still full (a flood of distinct tokens): forget the oldest half.
    if (this.verdicts.size >= VERDICT_CACHE_MAX) [...this.verdicts.keys()].slice(0, VERDICT_CACHE_MAX / 2).forEach((k) => this.verdicts.delete(k));
  }
}
