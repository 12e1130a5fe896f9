import type { Sql } from "../sql";
import { newId } from "../ids";
import type { Page } from "../types";
import { selectPage, type PageRequest } from "./page";

/** A playback signing key: the public half only (the private half is never stored). */
export interface SigningKeyRecord {
  seq: number;
  id: string;
  userId: string;
  name: string;
  /** SPKI PEM text ("-----BEGIN PUBLIC KEY-----…"). */
  publicKey: string;
  disabled: boolean;
  createdAt: number;
  /** When a JWT signed with it last opened a playback; null: never. */
  lastSeen: number | null;
}

interface Row {
  seq: number;
  id: string;
  user_id: string;
  name: string;
  public_key: string;
  disabled: number;
  created_at: number;
  last_seen: number | null;
}

const toKey = (r: Row): SigningKeyRecord => ({
  seq: r.seq,
  id: r.id,
  userId: r.user_id,
  name: r.name,
  publicKey: r.public_key,
  disabled: r.disabled === 1,
  createdAt: r.created_at,
  lastSeen: r.last_seen,
});

/**
 * A JWT's `pub` claim → the PEM it names (pure). Livepeer's clients put the public key in `pub`
 * as the API returned it, the base64 of the PEM text; the PEM itself is taken too. Line endings
 * and surrounding space do not matter. Undefined: neither.
 */
export function publicKeyPem(claim: string): string | undefined {
  const trimmed = claim.trim();
  const pem = trimmed.startsWith("-----BEGIN") ? trimmed : /^[A-Za-z0-9+/=\s]+$/.test(trimmed) ? Buffer.from(trimmed, "base64").toString("utf8").trim() : undefined;
  if (!pem || !/^-----BEGIN PUBLIC KEY-----[\s\S]+-----END PUBLIC KEY-----$/.test(pem)) return undefined;
  return pem.replace(/\r\n/g, "\n");
}

export class SigningKeysRepository {
  constructor(private readonly q: Sql) {}

  /** `publicKey`: SPKI PEM, stored trimmed (publicKeyPem normalizes lookups the same way). */
  async create(k: { userId: string; name: string; publicKey: string }): Promise<SigningKeyRecord> {
    const id = newId();
    await this.q.run("INSERT INTO signing_keys (id, user_id, name, public_key, disabled, created_at) VALUES (?, ?, ?, ?, 0, ?)", [
      id,
      k.userId,
      k.name,
      k.publicKey.trim().replace(/\r\n/g, "\n"),
      Date.now(),
    ]);
    return (await this.get(id))!;
  }

  async get(id: string): Promise<SigningKeyRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM signing_keys WHERE id = ?", [id]);
    return row && toKey(row);
  }

  /** The key, if `userId` owns it: another user's key is as absent as a missing one. */
  async getOwned(userId: string, id: string): Promise<SigningKeyRecord | undefined> {
    const k = await this.get(id);
    return k && k.userId === userId ? k : undefined;
  }

  async listOwned(userId: string, page: PageRequest): Promise<Page<SigningKeyRecord>> {
    return selectPage(this.q, "signing_keys", ["user_id = ?"], [userId], page, toKey);
  }

  /** How many the user has (MAX_SIGNING_KEYS_PER_USER). */
  async countOwned(userId: string): Promise<number> {
    return (await this.q.get<{ n: number }>("SELECT COUNT(*) AS n FROM signing_keys WHERE user_id = ?", [userId]))!.n;
  }

  /** Fields absent from the change stay as they are. */
  async update(id: string, c: { name?: string; disabled?: boolean }): Promise<void> {
    const sets: string[] = [];
    const params: unknown[] = [];
    if (c.name !== undefined) sets.push("name = ?"), params.push(c.name);
    if (c.disabled !== undefined) sets.push("disabled = ?"), params.push(c.disabled ? 1 : 0);
    if (sets.length === 0) return;
    await this.q.run(`UPDATE signing_keys SET ${sets.join(", ")} WHERE id = ?`, [...params, id]);
  }

  async delete(id: string): Promise<void> {
    await this.q.run("DELETE FROM signing_keys WHERE id = ?", [id]);
  }

  /**
   * JWT playback: the enabled key of `userId` (the playback's owner) whose public key is `pub`
   * (the JWT's claim: base64 of the PEM, or the PEM). Undefined when the claim names no key, a
   * disabled one, or another user's: all of them fail the same way.
   */
  async enabledForUser(userId: string, pub: string): Promise<SigningKeyRecord | undefined> {
    const pem = publicKeyPem(pub);
    if (pem === undefined) return undefined;
    const row = await this.q.get<Row>("SELECT * FROM signing_keys WHERE public_key = ? AND user_id = ? AND disabled = 0", [pem, userId]);
    return row && toKey(row);
  }

  /** A JWT signed with the key opened a playback at `at` (lastSeen). */
  async markSeen(id: string, at: number): Promise<void> {
    await this.q.run("UPDATE signing_keys SET last_seen = ? WHERE id = ? AND (last_seen IS NULL OR last_seen < ?)", [at, id, at]);
  }
}
