import { startCheckpointer } from "./checkpointer";
import { openDatabase, type Db } from "./connection";
import { ApiKeysRepository } from "./repositories/apiKeys";
import { EventsRepository } from "./repositories/events";
import { MultistreamTargetsRepository } from "./repositories/multistreamTargets";
import { SessionsRepository } from "./repositories/sessions";
import { StreamsRepository } from "./repositories/streams";
import { StreamTargetsRepository } from "./repositories/streamTargets";
import { UsersRepository } from "./repositories/users";
import { WebhookDeliveriesRepository } from "./repositories/webhookDeliveries";
import { WebhookLogRepository } from "./repositories/webhookLog";
import { WebhooksRepository } from "./repositories/webhooks";

export * from "./types";
export { statementCache, type Db } from "./connection";
export type { PageRequest } from "./repositories/page";
export type { StreamChanges, StreamFilters } from "./repositories/streams";
export type { WebhookFields } from "./repositories/webhooks";
export type { UserRecord } from "./repositories/users";
export type { EventRecord, NewEvent } from "./repositories/events";
export type { DeliveryRecord, DeliveryStatus, NewDelivery } from "./repositories/webhookDeliveries";
export type { NewWebhookLog, WebhookLogRecord } from "./repositories/webhookLog";
export { hashApiKey, orderedNow } from "./ids";
export { isStorageError, writeWhenStorageAllows } from "./storageErrors";
export { startSweeping } from "./sweep";
export { pruneWebhookHistory, type PrunedHistory } from "./history";

/** The database and one repository per table. */
export interface Store {
  db: Db;
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
  close(): void;
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

export function openStore(file: string, options: StoreOptions = {}): Store {
  const db = openDatabase(file);
  const checkpointer = options.checkpointInBackground && file !== ":memory:" ? startCheckpointer(db, options.checkpointInBackground) : undefined;
  return {
    db,
    users: new UsersRepository(db),
    apiKeys: new ApiKeysRepository(db),
    streams: new StreamsRepository(db),
    sessions: new SessionsRepository(db),
    targets: new MultistreamTargetsRepository(db),
    streamTargets: new StreamTargetsRepository(db),
    webhooks: new WebhooksRepository(db),
    events: new EventsRepository(db),
    webhookDeliveries: new WebhookDeliveriesRepository(db),
    webhookLog: new WebhookLogRepository(db),
    close: () => {
      checkpointer?.stop();
      db.close();
    },
  };
}
