import { statementCache, type Db } from "../connection";
import { newId } from "../ids";
import type { Page, TargetRecord } from "../types";
import { selectPage, type PageRequest } from "./page";

interface Row {
  seq: number;
  id: string;
  user_id: string;
  name: string;
  url: string;
  disabled: number;
  tls_verify: number;
  created_at: number;
}

const toTarget = (r: Row): TargetRecord => ({
  seq: r.seq,
  id: r.id,
  userId: r.user_id,
  name: r.name,
  url: r.url,
  disabled: r.disabled === 1,
  tlsVerify: r.tls_verify === 1,
  createdAt: r.created_at,
});

export class MultistreamTargetsRepository {
  private readonly sql: ReturnType<typeof statementCache>;

  constructor(private readonly db: Db) {
    this.sql = statementCache(db);
  }

  create(t: { userId: string; name: string; url: string; disabled: boolean; tlsVerify?: boolean }): TargetRecord {
    const id = newId();
    this
      .sql("INSERT INTO multistream_targets (id, user_id, name, url, disabled, tls_verify, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .run(id, t.userId, t.name, t.url, t.disabled ? 1 : 0, t.tlsVerify === false ? 0 : 1, Date.now());
    return this.get(id)!;
  }

  get(id: string): TargetRecord | undefined {
    const row = this.sql("SELECT * FROM multistream_targets WHERE id = ?").get(id) as Row | undefined;
    return row && toTarget(row);
  }

  getOwned(userId: string, id: string): TargetRecord | undefined {
    const t = this.get(id);
    return t && t.userId === userId ? t : undefined;
  }

  list(userId: string, page: PageRequest): Page<TargetRecord> {
    return selectPage(this.sql, "multistream_targets", ["user_id = ?"], [userId], page, toTarget);
  }

  /** Spec 4.3 rule 2: fields absent from the change stay as they are. */
  update(id: string, c: { name?: string; url?: string; disabled?: boolean; tlsVerify?: boolean }): void {
    const sets: string[] = [];
    const params: unknown[] = [];
    if (c.name !== undefined) sets.push("name = ?"), params.push(c.name);
    if (c.url !== undefined) sets.push("url = ?"), params.push(c.url);
    if (c.disabled !== undefined) sets.push("disabled = ?"), params.push(c.disabled ? 1 : 0);
    if (c.tlsVerify !== undefined) sets.push("tls_verify = ?"), params.push(c.tlsVerify ? 1 : 0);
    if (sets.length === 0) return;
    this.sql(`UPDATE multistream_targets SET ${sets.join(", ")} WHERE id = ?`).run(...params, id);
  }

  /** How many the user has (the per-user cap). */
  countOwned(userId: string): number {
    return (this.sql("SELECT COUNT(*) AS n FROM multistream_targets WHERE user_id = ?").get(userId) as { n: number }).n;
  }

  delete(id: string): void {
    this.sql("DELETE FROM multistream_targets WHERE id = ?").run(id);
  }
}
