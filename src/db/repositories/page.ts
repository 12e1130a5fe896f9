import type { Sql } from "../sql";
import type { Page } from "../types";

export interface PageRequest {
  limit: number;
  /** Only items with a smaller seq (the cursor of the previous page). */
  beforeSeq?: number;
}

/**
 * Runs `SELECT * FROM <from> WHERE <where> [AND seq < ?] ORDER BY seq DESC LIMIT n+1` and maps
 * the rows: the extra row only tells whether a next page exists. Keyset pagination on the
 * ever-growing seq never skips or repeats an item while others are inserted or deleted.
 */
export async function selectPage<Row, T>(
  q: Sql,
  from: string,
  where: string[],
  params: unknown[],
  page: PageRequest,
  map: (row: Row) => T & { seq: number },
): Promise<Page<T & { seq: number }>> {
  const clauses = [...where];
  const args = [...params];
  if (page.beforeSeq !== undefined) {
    clauses.push("seq < ?");
    args.push(page.beforeSeq);
  }
  const text = `SELECT * FROM ${from}${clauses.length ? " WHERE " + clauses.join(" AND ") : ""} ORDER BY seq DESC LIMIT ?`;
  const rows = await q.all<Row>(text, [...args, page.limit + 1]);
  const items = rows.slice(0, page.limit).map(map);
  const last = items[items.length - 1];
  return { items, nextSeq: rows.length > page.limit && last ? last.seq : null };
}
