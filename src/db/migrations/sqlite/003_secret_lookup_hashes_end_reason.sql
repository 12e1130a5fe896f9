-- Stream keys and playback ids are found by the SHA-256 of the value presented, never by
-- the value itself: an index walk's timing then tells an attacker about a hash, not about
-- a secret's prefix. The plain values stay: the API shows a stream its own key.
ALTER TABLE streams ADD COLUMN stream_key_hash TEXT;
ALTER TABLE streams ADD COLUMN playback_id_hash TEXT;
UPDATE streams SET stream_key_hash = sha256_hex(stream_key) WHERE stream_key IS NOT NULL;
UPDATE streams SET playback_id_hash = sha256_hex(playback_id) WHERE playback_id IS NOT NULL;
CREATE UNIQUE INDEX streams_stream_key_hash ON streams(stream_key_hash);
CREATE UNIQUE INDEX streams_playback_id_hash ON streams(playback_id_hash);

-- Why a live session ended ("publisher left", "storage: …"), for operators and API users.
ALTER TABLE sessions ADD COLUMN end_reason TEXT;
