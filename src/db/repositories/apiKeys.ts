import type { Sql } from "../sql";
import { hashApiKey, newApiKey, newId } from "../ids";

export class ApiKeysRepository {
  constructor(private readonly q: Sql) {}

  /** Issues a new key for the user and returns it; only its hash is stored. */
  async create(userId: string): Promise<string> {
    const key = newApiKey();
    await this.q.run("INSERT INTO api_keys (id, user_id, key_hash, created_at) VALUES (?, ?, ?, ?)", [newId(), userId, hashApiKey(key), Date.now()]);
    return key;
  }

  /** Every key's id, owner and creation time (never the key: only its hash is stored). */
  async list(userName?: string): Promise<{ id: string; userName: string; createdAt: number }[]> {
    const select = "SELECT k.id, u.name AS user_name, k.created_at FROM api_keys k JOIN users u ON u.id = k.user_id";
    const order = "ORDER BY k.created_at, k.id";
    const rows =
      userName === undefined
        ? await this.q.all<{ id: string; user_name: string; created_at: number }>(`${select} ${order}`)
        : await this.q.all<{ id: string; user_name: string; created_at: number }>(`${select} WHERE u.name = ? ${order}`, [userName]);
    return rows.map((r) => ({ id: r.id, userName: r.user_name, createdAt: r.created_at }));
  }

  /** Revokes a key by its id: requests with it are refused (401) from then on. False when there is none. */
  async revoke(id: string): Promise<boolean> {
    return (await this.q.run("DELETE FROM api_keys WHERE id = ?", [id])) > 0;
  }

  /** The id of a key (shown by `keys list`). */
  async idForKey(key: string): Promise<string | undefined> {
    return (await this.q.get<{ id: string }>("SELECT id FROM api_keys WHERE key_hash = ?", [hashApiKey(key)]))?.id;
  }

  /**
   * The owner of a key, looked up by the key's SHA-256: the lookup compares digests, never
   * the secret itself, so its timing tells nothing about a stored key.
   */
  async userIdForKey(key: string): Promise<string | undefined> {
    return (await this.q.get<{ user_id: string }>("SELECT user_id FROM api_keys WHERE key_hash = ?", [hashApiKey(key)]))?.user_id;
  }
}
