-- How many of a node's viewers of a playback id watch over WebRTC (the rest of `count` play
-- HLS): the dashboard shows viewers per protocol. Rows written before it say 0, and are
-- replaced at the node's next heartbeat.
ALTER TABLE viewer_counts ADD COLUMN webrtc_count INTEGER NOT NULL DEFAULT 0;
