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
