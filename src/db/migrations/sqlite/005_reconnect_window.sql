-- A stream's own reconnect window (seconds): how long its session waits for the publisher to
-- come back before it ends. NULL: the operator's RECONNECT_WINDOW_SECONDS.
ALTER TABLE streams ADD COLUMN reconnect_window INTEGER;
