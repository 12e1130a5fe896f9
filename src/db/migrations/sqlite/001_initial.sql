-- Users own everything; an API key identifies its user. Only the SHA-256 of a key is kept.
CREATE TABLE users (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users(id),
  key_hash   TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
);

-- Parent streams and historic child stream objects (parent_id set, one per session).
-- seq orders lists and backs the pagination cursor: it only grows.
CREATE TABLE streams (
  seq                          INTEGER PRIMARY KEY AUTOINCREMENT,
  id                           TEXT NOT NULL UNIQUE,
  user_id                      TEXT NOT NULL REFERENCES users(id),
  parent_id                    TEXT REFERENCES streams(id),
  name                         TEXT NOT NULL,
  stream_key                   TEXT UNIQUE,
  playback_id                  TEXT UNIQUE,
  created_at                   INTEGER NOT NULL,
  is_active                    INTEGER NOT NULL DEFAULT 0,
  last_seen                    INTEGER NOT NULL DEFAULT 0,
  record                       INTEGER NOT NULL DEFAULT 0,
  suspended                    INTEGER NOT NULL DEFAULT 0,
  profiles                     TEXT NOT NULL DEFAULT '[]',
  playback_policy              TEXT,
  source_segments              INTEGER NOT NULL DEFAULT 0,
  transcoded_segments          INTEGER NOT NULL DEFAULT 0,
  source_segments_duration     REAL NOT NULL DEFAULT 0,
  transcoded_segments_duration REAL NOT NULL DEFAULT 0,
  source_bytes                 INTEGER NOT NULL DEFAULT 0,
  transcoded_bytes             INTEGER NOT NULL DEFAULT 0,
  last_terminated_at           INTEGER,
  deleted_at                   INTEGER
);
CREATE INDEX streams_user_seq ON streams(user_id, seq);
CREATE INDEX streams_parent ON streams(parent_id);

-- One row per live session; its id is also the id of the matching child stream object.
CREATE TABLE sessions (
  seq                          INTEGER PRIMARY KEY AUTOINCREMENT,
  id                           TEXT NOT NULL UNIQUE,
  user_id                      TEXT NOT NULL REFERENCES users(id),
  parent_id                    TEXT NOT NULL REFERENCES streams(id),
  name                         TEXT NOT NULL,
  playback_id                  TEXT,
  created_at                   INTEGER NOT NULL,
  ended_at                     INTEGER,
  last_seen                    INTEGER NOT NULL DEFAULT 0,
  record                       INTEGER NOT NULL DEFAULT 0,
  profiles                     TEXT NOT NULL DEFAULT '[]',
  source_segments              INTEGER NOT NULL DEFAULT 0,
  transcoded_segments          INTEGER NOT NULL DEFAULT 0,
  source_segments_duration     REAL NOT NULL DEFAULT 0,
  transcoded_segments_duration REAL NOT NULL DEFAULT 0,
  source_bytes                 INTEGER NOT NULL DEFAULT 0,
  transcoded_bytes             INTEGER NOT NULL DEFAULT 0,
  recording_status             TEXT,
  recording_error              TEXT
);
CREATE INDEX sessions_user_seq ON sessions(user_id, seq);
CREATE INDEX sessions_parent_seq ON sessions(parent_id, seq);

CREATE TABLE multistream_targets (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  user_id    TEXT NOT NULL REFERENCES users(id),
  name       TEXT NOT NULL,
  url        TEXT NOT NULL,
  disabled   INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);
CREATE INDEX multistream_targets_user_seq ON multistream_targets(user_id, seq);

-- A stream's references to targets (docs/api.md#spec-24-multistream-target-object: the stream must reference a target for it to
-- receive anything). position keeps the order the user gave.
CREATE TABLE stream_targets (
  stream_id  TEXT NOT NULL REFERENCES streams(id),
  position   INTEGER NOT NULL,
  target_id  TEXT NOT NULL REFERENCES multistream_targets(id),
  profile    TEXT NOT NULL,
  video_only INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (stream_id, position)
);
CREATE INDEX stream_targets_target ON stream_targets(target_id);

CREATE TABLE webhooks (
  seq               INTEGER PRIMARY KEY AUTOINCREMENT,
  id                TEXT NOT NULL UNIQUE,
  user_id           TEXT NOT NULL REFERENCES users(id),
  name              TEXT NOT NULL,
  url               TEXT NOT NULL,
  events            TEXT NOT NULL,
  shared_secret     TEXT,
  stream_id         TEXT,
  created_at        INTEGER NOT NULL,
  last_triggered_at INTEGER,
  last_failure      TEXT
);
CREATE INDEX webhooks_user_seq ON webhooks(user_id, seq);
