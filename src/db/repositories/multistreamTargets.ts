import type { Sql } from "../sql";
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
  constructor(private readonly q: Sql) {}

  async create(t: { userId: string; name: string; url: string; disabled: boolean; tlsVerify?: boolean }): Promise<TargetRecord> {
    const id = newId();
    await this.q.run("INSERT INTO multistream_targets (id, user_id, name, url, disabled, tls_verify, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)", [
      id,
      t.userId,
      t.name,
      t.url,
      t.disabled ? 1 : 0,
      t.tlsVerify === false ? 0 : 1,
      Date.now(),
    ]);
    return (await this.get(id))!;
  }

  async get(id: string): Promise<TargetRecord | undefined> {
    const row = await this.q.get<Row>("SELECT * FROM multistream_targets WHERE id = ?", [id]);
    return row && toTarget(row);
  }

  async getOwned(userId: string, id: string): Promise<TargetRecord | undefined> {
    const t = await this.get(id);
    return t && t.userId === userId ? t : undefined;
  }

  async list(userId: string, page: PageRequest): Promise<Page<TargetRecord>> {
    return selectPage(this.q, "multistream_targets", ["user_id = ?"], [userId], page, toTarget);
  }

  /** Spec 4.3 rule 2: fields absent from the change stay as they are. */
  async update(id: string, c: { name?: string; url?: string; disabled?: boolean; tlsVerify?: boolean }): Promise<void> {
    const sets: string[] = [];
    const params: unknown[] = [];
    if (c.name !== undefined) sets.push("name = ?"), params.push(c.name);
    if (c.url !== undefined) sets.push("url = ?"), params.push(c.url);
    if (c.disabled !== undefined) sets.push("disabled = ?"), params.push(c.disabled ? 1 : 0);
    if (c.tlsVerify !== undefined) sets.push("tls_verify = ?"), params.push(c.tlsVerify ? 1 : 0);
    if (sets.length === 0) return;
    await this.q.run(`UPDATE multistream_targets SET ${sets.join(", ")} WHERE id = ?`, [...params, id]);
  }

  /** How many the user has (the per-user cap). */
  async countOwned(userId: string): Promise<number> {
    return (await this.q.get<{ n: number }>("SELECT COUNT(*) AS n FROM multistream_targets WHERE user_id = ?", [userId]))!.n;
  }

  async delete(id: string): Promise<void> {
    await this.q.run("DELETE FROM multistream_targets WHERE id = ?", [id]);
  }
}
