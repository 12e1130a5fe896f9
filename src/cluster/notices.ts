import pg from "pg";
import type { Sql } from "../db";
import type { Logger } from "../log";
import type { StreamNotice } from "../sessions";

/** The PostgreSQL channel stream notices travel on. */
export const NOTICE_CHANNEL = "onair_streams";

const CHANGES = new Set<StreamNotice["change"]>(["changed", "suspended", "deleted", "terminated"]);

/** A notice as sent, or undefined for anything else on the channel (pure). */
export function parseNotice(payload: string | undefined): StreamNotice | undefined {
  try {
    const v = JSON.parse(payload ?? "") as Partial<StreamNotice>;
    if (typeof v.streamId === "string" && v.change && CHANGES.has(v.change)) return { streamId: v.streamId, change: v.change };
  } catch {
    // not ours
  }
  return undefined;
}

/**
 * Sends a notice to every node, inside the transaction that makes the change: PostgreSQL
 * delivers it at commit, and never for a rollback.
 */
export async function sendNotice(q: Sql, notice: StreamNotice): Promise<void> {
  if (q.dialect !== "postgres") return;
  await q.run("SELECT pg_notify(?, ?)", [NOTICE_CHANNEL, JSON.stringify({ streamId: notice.streamId, change: notice.change })]);
}

/**
 * Hears the notices of other nodes on one dedicated connection (LISTEN needs a session of its
 * own, not a pooled one), reconnecting and listening again when it drops. NOTIFY keeps nothing
 * for a listener that was away: the reconciliation poll (src/cluster/reconcile.ts) covers the gap.
 */
export class NoticeListener {
  private client: pg.Client | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;

  constructor(
    private readonly url: string,
    /** Named in pg_stat_activity as `onair-notices <nodeId>`. */
    private readonly nodeId: string,
    private readonly onNotice: (notice: StreamNotice) => void,
    private readonly log: Logger,
  ) {}

  /** Connects and listens; resolves once listening (or rejects if the first connection fails). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: `onair-notices ${this.nodeId}`.slice(0, 63) });
    client.on("notification", (m) => {
      if (m.channel !== NOTICE_CHANNEL) return;
      const notice = parseNotice(m.payload);
      if (notice) this.onNotice(notice);
    });
    // Dropped (the server restarted, the backend was terminated): listen again.
    client.on("error", (err) => this.lost(client, err));
    client.on("end", () => this.lost(client));
    await client.connect();
    await client.query(`LISTEN ${NOTICE_CHANNEL}`);
    if (this.closed) return void (await client.end().catch(() => undefined));
    this.client = client;
    if (this.failures > 0) this.log.info({ failures: this.failures }, "stream notices: listening again");
    this.failures = 0;
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    this.log.warn({ err }, "stream notices: connection lost; reconnecting (the reconciliation poll covers the gap)");
    void client.end().catch(() => undefined);
    this.retrySoon();
  }

  private retrySoon(): void {
    if (this.closed) return;
    const delay = Math.min(250 * 2 ** this.failures++, 5_000);
    this.retryTimer = setTimeout(() => {
      this.connect().catch((err: unknown) => {
        this.log.warn({ err }, "stream notices: could not listen; will retry");
        this.retrySoon();
      });
    }, delay);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }
}
