-- Fencing: each take of a stream's lease (a new session, a takeover, the janitor ending a lost
-- node's session) makes a new epoch; a node writes about a live session only while the epoch it
-- was given is still the stream's.
ALTER TABLE streams ADD COLUMN live_epoch BIGINT NOT NULL DEFAULT 0;
-- Control as stored state: every change live sessions must act on (suspend, delete, terminate,
-- settings) counts up control_seq; a terminate stores the count it made. A node that missed the
-- notice finds it at its next poll.
ALTER TABLE streams ADD COLUMN control_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE streams ADD COLUMN terminate_seq BIGINT NOT NULL DEFAULT 0;
-- Where other nodes reach this node's RTMP ingest (host:port): a publish that lands on another
-- ingest node while this one holds the stream is relayed here.
ALTER TABLE nodes ADD COLUMN rtmp_address TEXT;
-- Heartbeats renew and list a node's leases by live_node.
CREATE INDEX streams_live_node ON streams (live_node) WHERE live_node IS NOT NULL;
