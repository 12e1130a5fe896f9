import crypto from "node:crypto";

// Viewer tokens: what a player carries from one HLS request to the next once it has been let in.
//
// A master playlist answer names a new viewer and writes a *session* token (`s`) into its
// variant URIs; every media playlist request then carries it, which is how viewers are counted
// and, for a gated stream, how a player keeps watching after its JWT did its job. A gated
// stream's media playlists write short-lived *media* tokens (`m`) into their segment, part and
// init URIs: a segment URL copied out of a session stops working when its token expires.
//
// A token is `<viewerId>.<expiry in s>.<HMAC>`, keyed with the server's secret over its kind, the
// playback id and both fields: stateless, checked on any node that shares the secret. A token
// may also be bound to a credential (`bound`, also under the MAC but not in the token): a
// `webhook` stream's session token is bound to the access key its webhook admitted, so it
// proves that this key was let in, and shown with another key it names nobody.

export type TokenKind = "s" | "m";

export const SESSION_PARAM = "s";
export const MEDIA_PARAM = "m";

export interface ViewerToken {
  viewerId: string;
  /** Seconds since the epoch. */
  expires: number;
}

const VIEWER_ID = /^[A-Za-z0-9_-]{16}$/;
const TOKEN = /^([A-Za-z0-9_-]{16})\.(\d{1,12})\.([A-Za-z0-9_-]{22})$/;

export const newViewerId = (): string => crypto.randomBytes(12).toString("base64url");

const mac = (key: Buffer, kind: TokenKind, playbackId: string, viewerId: string, expires: number, bound: string | undefined) => {
  const hmac = crypto.createHmac("sha256", key).update(`${kind}\n${playbackId}\n${viewerId}\n${expires}`);
  if (bound !== undefined) hmac.update(`\n${bound}`);
  return hmac.digest().subarray(0, 16).toString("base64url");
};

export function mintToken(key: Buffer, kind: TokenKind, playbackId: string, t: ViewerToken, bound?: string): string {
  if (!VIEWER_ID.test(t.viewerId)) throw new Error(`not a viewer id: ${t.viewerId}`);
  return `${t.viewerId}.${t.expires}.${mac(key, kind, playbackId, t.viewerId, t.expires, bound)}`;
}

/**
 * A token of this kind and playback id with a good signature (expired or not: the caller
 * decides what expiry means), or undefined for anything else.
 */
export function readToken(key: Buffer, kind: TokenKind, playbackId: string, value: unknown, bound?: string): ViewerToken | undefined {
  if (typeof value !== "string") return undefined;
  const m = TOKEN.exec(value);
  if (!m) return undefined;
  const expires = Number(m[2]);
  const given = Buffer.from(m[3]!);
  const wanted = Buffer.from(mac(key, kind, playbackId, m[1]!, expires, bound));
  return crypto.timingSafeEqual(given, wanted) ? { viewerId: m[1]!, expires } : undefined;
}
