-- Pull ingest: the stream's pull source ({source, headers?, isMobile?, location?} as JSON; null
-- for a pushed stream), and when start-pull last asked for the pull to start now (ms).
ALTER TABLE streams ADD COLUMN pull TEXT;
ALTER TABLE streams ADD COLUMN pull_requested_at BIGINT;
