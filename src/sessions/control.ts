import type { Sql } from "../db";
import type { LiveHealth, LiveRates } from "../shapes";

/**
 * A change to a stream that live sessions must hear of, wherever they run: its key's admission
 * (created, suspended, resumed, deleted), its settings (multistream targets, profiles), or an
 * order to end its session now.
 */
export interface StreamNotice {
  streamId: string;
  change: "changed" | "suspended" | "deleted" | "terminated";
}

/** What the API may ask of live sessions; it never touches ingest or ffmpeg itself. */
export interface LiveControl {
  /**
   * Tells every node of a change to a stream. Joins the transaction `q` that makes the change
   * and is acted on once it commits (a rolled-back change is never announced): the node running
   * the stream's session ends it (suspended, deleted, terminated) or applies its new settings,
   * and every ingest node updates its key index.
   */
  announce(q: Sql, notice: StreamNotice): Promise<void>;
  /** Live rates of a stream, its child stream or its session (by id) while it is live. */
  rates(id: string): LiveRates | undefined;
  /** Health of a stream (or its session) while it has an open session, live or reconnecting. */
  health(id: string): LiveHealth | undefined;
}
