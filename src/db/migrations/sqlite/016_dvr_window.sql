-- A stream's own DVR window (seconds): how much of the live stream its playlists keep listed,
-- so viewers can seek back; 0 is off. NULL: the operator's DVR_WINDOW_SECONDS.
ALTER TABLE streams ADD COLUMN dvr_window INTEGER;
