-- Playback signing keys (POST /access-control/signing-key): the public half of an ES256 key
-- pair, as PEM; the private half is returned once at creation and never stored. A JWT's `pub`
-- claim names the key, so the public key is unique and looked up.
CREATE TABLE signing_keys (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  user_id    TEXT NOT NULL REFERENCES users(id),
  name       TEXT NOT NULL,
  public_key TEXT NOT NULL UNIQUE,
  disabled   INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  last_seen  INTEGER
);
CREATE INDEX signing_keys_user_seq ON signing_keys(user_id, seq);

-- Concurrent viewers: each node writes what it counts for the streams it packages every few
-- seconds; GET /data/views/now sums the rows still fresh (a dead node's rows age out).
CREATE TABLE viewer_counts (
  node_id     TEXT NOT NULL,
  playback_id TEXT NOT NULL,
  count       INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (node_id, playback_id)
);
CREATE INDEX viewer_counts_playback ON viewer_counts(playback_id);
