import { startCheckpointer } from "./checkpointer";
import { openSql, type DatabaseLocation } from "./connection";
import type { Sql, SqlDatabase } from "./sql";
import { ApiKeysRepository } from "./repositories/apiKeys";
import { EventsRepository } from "./repositories/events";
import { MultistreamTargetsRepository } from "./repositories/multistreamTargets";
import { NodesRepository } from "./repositories/nodes";
import { SessionsRepository } from "./repositories/sessions";
import { SigningKeysRepository } from "./repositories/signingKeys";
import { StreamsRepository } from "./repositories/streams";
import { StreamTargetsRepository } from "./repositories/streamTargets";
import { UsersRepository } from "./repositories/users";
import { ViewerCountsRepository } from "./repositories/viewerCounts";
import { WebhookDeliveriesRepository } from "./repositories/webhookDeliveries";
import { WebhookLogRepository } from "./repositories/webhookLog";
import { WebhooksRepository } from "./repositories/webhooks";

export * from "./types";
export { statementCache, type Db, type DatabaseLocation } from "./connection";
export type { Dialect, Sql, SqlDatabase } from "./sql";
export { isRetryableTransactionError, lockKey } from "./sql";
export type { PageRequest } from "./repositories/page";
export type { StreamChanges, StreamFilters } from "./repositories/streams";
export type { WebhookFields } from "./repositories/webhooks";
export type { UserRecord } from "./repositories/users";
export type { EventRecord, NewEvent } from "./repositories/events";
export type { DeliveryRecord, DeliveryStatus, NewDelivery } from "./repositories/webhookDeliveries";
export type { NewWebhookLog, WebhookLogRecord } from "./repositories/webhookLog";
export { LeaseLost, NodesRepository, type Claim, type ControlState, type Lease, type NodeRecord } from "./repositories/nodes";
export { AssetsRepository, type AssetPhase, type AssetRecord, type AssetVideoSpec, type NewAsset } from "./repositories/assets";
export { publicKeyPem, type SigningKeyRecord } from "./repositories/signingKeys";
export { hashApiKey, orderedNow, secretsEqual, sha256Hex } from "./ids";
export { isStorageError, writeWhenStorageAllows } from "./storageErrors";
export { SqliteConnection, sqliteErrorCode } from "./sqlite";
export { startSweeping } from "./sweep";
export { pruneWebhookHistory, type PrunedHistory } from "./history";

/** One repository per table, over the database or over one transaction. */
export interface Repositories {
  users: UsersRepository;
  apiKeys: ApiKeysRepository;
  streams: StreamsRepository;
  sessions: SessionsRepository;
  targets: MultistreamTargetsRepository;
  streamTargets: StreamTargetsRepository;
  webhooks: WebhooksRepository;
  /** Raised events that some webhook was registered for (src/events). */
  events: EventsRepository;
  /** One row per (event, webhook) and its lane order (src/webhooks). */
  webhookDeliveries: WebhookDeliveriesRepository;
  /** Every delivery attempt (GET /webhook/{id}/log). */
  webhookLog: WebhookLogRepository;
  /** Nodes alive, and which node runs which stream (several nodes on PostgreSQL). */
  nodes: NodesRepository;
  /** Playback signing keys (public halves) for JWT playback. */
  signingKeys: SigningKeysRepository;
  /** Concurrent viewers each node counts (GET /data/views/now). */
  viewerCounts: ViewerCountsRepository;
}

/** Repositories and the handle they run on: the store itself, or one of its transactions. */
export type Tx = Repositories & { db: Sql };

/** The database and its repositories. */
export interface Store extends Repositories {
  db: SqlDatabase;
  /** Runs `work` in one transaction, with repositories bound to it; inside one, joins it. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /**
   * Long-running processes (the server, a worker): checkpoint the write-ahead log from a thread
   * instead of inside commits on the event loop (src/db/checkpointer.ts). Hears when
   * checkpoints start or stop failing.
   */
  checkpointInBackground?: (problem: { error?: string; recovered?: boolean }) => void;
}

export { logCheckpoints } from "./checkpointer";

function repositoriesOver(q: Sql): Tx {
  return {
    db: q,
    users: new UsersRepository(q),
    apiKeys: new ApiKeysRepository(q),
    streams: new StreamsRepository(q),
    sessions: new SessionsRepository(q),
    targets: new MultistreamTargetsRepository(q),
    streamTargets: new StreamTargetsRepository(q),
    webhooks: new WebhooksRepository(q),
    events: new EventsRepository(q),
    webhookDeliveries: new WebhookDeliveriesRepository(q),
    webhookLog: new WebhookLogRepository(q),
    nodes: new NodesRepository(q),
    signingKeys: new SigningKeysRepository(q),
    viewerCounts: new ViewerCountsRepository(q),
  };
}

/** Opens the store: a SQLite file (a path, or `{file}`), or PostgreSQL (`{url}`). */
export async function openStore(where: string | DatabaseLocation, options: StoreOptions = {}): Promise<Store> {
  const db = await openSql(typeof where === "string" ? { file: where } : where);
  const file = typeof where === "string" ? where : "file" in where ? where.file : undefined;
  const checkpointer =
    options.checkpointInBackground && db.sqlite && file !== ":memory:" ? startCheckpointer(db.sqlite, options.checkpointInBackground) : undefined;
  return {
    ...repositoriesOver(db),
    db,
    transaction: (work) => db.transaction((tx) => work(repositoriesOver(tx))),
    close: async () => {
      checkpointer?.stop();
      await db.close();
    },
  };
}
