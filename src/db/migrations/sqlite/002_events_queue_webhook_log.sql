-- The job queue's durable table (src/queue). With the embedded queue it is the queue itself;
-- with BullMQ it is the outbox that jobs pass through on their way to Redis, so that enqueueing
-- is one SQLite write that commits or rolls back with the state change that caused it.
-- A claim is a lease: run_at moves to the lease's end and lease_token names the holder, so a
-- job whose worker died simply comes due again.
CREATE TABLE queue_jobs (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  id          TEXT NOT NULL UNIQUE,
  queue       TEXT NOT NULL,
  data        TEXT NOT NULL,
  state       TEXT NOT NULL DEFAULT 'waiting',
  run_at      INTEGER NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  lease_token TEXT,
  created_at  INTEGER NOT NULL,
  finished_at INTEGER,
  last_error  TEXT
);
CREATE INDEX queue_jobs_due ON queue_jobs(state, run_at);

-- Domain events that at least one webhook was registered for, as raised: the stream is a
-- snapshot (without its key) taken then, so a stream deleted later does not lose its events.
CREATE TABLE events (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  user_id    TEXT NOT NULL,
  stream_id  TEXT NOT NULL,
  name       TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  stream     TEXT NOT NULL,
  payload    TEXT NOT NULL
);

-- One row per (event, webhook), and one per resend. A webhook's deliveries for one stream form
-- a lane sent in seq order: only the oldest pending delivery of a lane has a queue job.
-- No foreign key to webhooks: deleting a webhook must not be blocked by its history.
CREATE TABLE webhook_deliveries (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  id           TEXT NOT NULL UNIQUE,
  webhook_id   TEXT NOT NULL,
  event_id     TEXT NOT NULL REFERENCES events(id),
  stream_id    TEXT NOT NULL,
  status       TEXT NOT NULL DEFAULT 'pending',
  window_start INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  finished_at  INTEGER
);
CREATE INDEX webhook_deliveries_lane ON webhook_deliveries(webhook_id, stream_id, status, seq);

-- Every delivery attempt: GET /webhook/{id}/log, newest first.
CREATE TABLE webhook_log (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  id              TEXT NOT NULL UNIQUE,
  webhook_id      TEXT NOT NULL,
  delivery_id     TEXT NOT NULL,
  event_id        TEXT NOT NULL,
  event           TEXT NOT NULL,
  attempt         INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  duration_ms     INTEGER NOT NULL,
  success         INTEGER NOT NULL,
  url             TEXT NOT NULL,
  request_headers TEXT NOT NULL,
  request_body    TEXT NOT NULL,
  status_code     INTEGER,
  status_text     TEXT,
  response_body   TEXT,
  error           TEXT
);
CREATE INDEX webhook_log_webhook_seq ON webhook_log(webhook_id, seq);
CREATE INDEX webhook_log_delivery ON webhook_log(delivery_id);
