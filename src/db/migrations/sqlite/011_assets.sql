-- Assets: clips cut from a stream's live window or a session's recording (POST /clip), made by
-- a queue job. `phase` follows Livepeer's asset status: waiting, processing, ready, failed.
CREATE TABLE assets (
  seq                INTEGER PRIMARY KEY AUTOINCREMENT,
  id                 TEXT NOT NULL UNIQUE,
  user_id            TEXT NOT NULL REFERENCES users(id),
  playback_id        TEXT NOT NULL,
  -- Looked up by its SHA-256, as streams' playback ids are (migration 003): no timing of an
  -- index walk tells anything about the secret itself.
  playback_id_hash   TEXT NOT NULL UNIQUE,
  name               TEXT NOT NULL,
  stream_id          TEXT NOT NULL,
  session_id         TEXT NOT NULL,
  source_playback_id TEXT NOT NULL,
  -- The range asked for, wall-clock ms.
  clip_start         INTEGER NOT NULL,
  clip_end           INTEGER NOT NULL,
  created_at         INTEGER NOT NULL,
  phase              TEXT NOT NULL,
  updated_at         INTEGER NOT NULL,
  progress           REAL,
  error_message      TEXT,
  size               INTEGER,
  duration           REAL,
  video_spec         TEXT
);
CREATE INDEX assets_user_seq ON assets(user_id, seq);
CREATE INDEX assets_stream_seq ON assets(stream_id, seq);
CREATE INDEX assets_session_seq ON assets(session_id, seq);
