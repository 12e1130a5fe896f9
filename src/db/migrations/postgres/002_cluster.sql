-- Several nodes on one database: who is alive, who runs which stream, whose session it is.
CREATE TABLE nodes (
  id           TEXT PRIMARY KEY,
  roles        TEXT NOT NULL,
  internal_url TEXT,
  started_at   BIGINT NOT NULL,
  last_seen    BIGINT NOT NULL
);
-- The node running a stream's session, and until when its lease holds (renewed by its heartbeat).
ALTER TABLE streams ADD COLUMN live_node TEXT;
ALTER TABLE streams ADD COLUMN live_until BIGINT;
-- The node that ran the session: a session whose node is gone is ended by any other.
ALTER TABLE sessions ADD COLUMN node_id TEXT;
CREATE INDEX sessions_open ON sessions(node_id) WHERE ended_at IS NULL;
-- Secrets every node must share (the recording URL signing key), made once by the first node.
CREATE TABLE settings (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
