-- rtmps destinations' certificates are verified against the system's CA store; a target may
-- opt out (a self-signed ingest on the operator's own network). Existing targets verify too.
ALTER TABLE multistream_targets ADD COLUMN tls_verify INTEGER NOT NULL DEFAULT 1;
