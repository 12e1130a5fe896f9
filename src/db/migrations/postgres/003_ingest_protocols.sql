-- How the session's publisher reached onair: rtmp, webrtc (WHIP) or srt.
ALTER TABLE sessions ADD COLUMN protocol TEXT NOT NULL DEFAULT 'rtmp';
-- SRT ingest (SRT_PORTS): the stream's own listener port and its passphrase, given at creation.
ALTER TABLE streams ADD COLUMN srt_port INTEGER;
ALTER TABLE streams ADD COLUMN srt_passphrase TEXT;
CREATE UNIQUE INDEX streams_srt_port ON streams(srt_port) WHERE srt_port IS NOT NULL;
