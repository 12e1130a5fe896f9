import { statementCache, type Db } from "../connection";
import { hashApiKey, newApiKey, newId } from "../ids";

export class ApiKeysRepository {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(private readonly db: Db) {
    this.sql = statementCache(db);
  }

  /** Issues a new key for the user and returns it; only its hash is stored. */
  create(userId: string): string {
    const key = newApiKey();
    this
      .sql("INSERT INTO api_keys (id, user_id, key_hash, created_at) VALUES (?, ?, ?, ?)")
      .run(newId(), userId, hashApiKey(key), Date.now());
    return key;
  }

  /** Every key's id, owner and creation time (never the key: only its hash is stored). */
  list(userName?: string): { id: string; userName: string; createdAt: number }[] {
    const rows = this.sql(
      `SELECT k.id, u.name AS user_name, k.created_at FROM api_keys k JOIN users u ON u.id = k.user_id
       WHERE ? IS NULL OR u.name = ? ORDER BY k.created_at, k.id`,
    ).all(userName ?? null, userName ?? null) as { id: string; user_name: string; created_at: number }[];
    return rows.map((r) => ({ id: r.id, userName: r.user_name, createdAt: r.created_at }));
  }

  /** Revokes a key by its id: requests with it are refused (401) from then on. False when there is none. */
  revoke(id: string): boolean {
    return this.sql("DELETE FROM api_keys WHERE id = ?").run(id).changes > 0;
  }

  /** The id of a key (shown by `keys list`). */
  idForKey(key: string): string | undefined {
    return (this.sql("SELECT id FROM api_keys WHERE key_hash = ?").get(hashApiKey(key)) as { id: string } | undefined)?.id;
  }

  /**
   * The owner of a key, looked up by the key's SHA-256: the lookup compares digests, never
   * the secret itself, so its timing tells nothing about a stored key.
   */
  userIdForKey(key: string): string | undefined {
    const row = this.sql("SELECT user_id FROM api_keys WHERE key_hash = ?").get(hashApiKey(key)) as
      | { user_id: string }
      | undefined;
    return row?.user_id;
  }
}
