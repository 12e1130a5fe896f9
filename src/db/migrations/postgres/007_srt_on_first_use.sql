-- SRT ports on first use: when the stream's owner last asked for its srtUrl or a
-- caller last published through its listener (ms). A listener is armed while this is recent
-- (SRT_LISTENER_IDLE_SECONDS).
ALTER TABLE streams ADD COLUMN srt_used_at BIGINT;
-- Pulled streams never take SRT: their ports go back to the pool.
UPDATE streams SET srt_port = NULL, srt_passphrase = NULL WHERE pull IS NOT NULL;
-- Ports given out before: their owners may have them in an encoder already, so each stays armed
-- for one idle period from the upgrade.
UPDATE streams SET srt_used_at = (EXTRACT(EPOCH FROM now()) * 1000)::BIGINT WHERE srt_port IS NOT NULL;
