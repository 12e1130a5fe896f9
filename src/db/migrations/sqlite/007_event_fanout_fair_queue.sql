-- An event is recorded as one row and one fan-out job; the job turns it into deliveries, a
-- bounded batch of webhooks per transaction, off the path that raised it. fanout_after is the
-- seq of the last webhook looked at (0: none yet); NULL once every webhook has its delivery.
-- Events recorded before this migration were fanned out when raised.
ALTER TABLE events ADD COLUMN fanout_after INTEGER;
CREATE INDEX events_fanout_pending ON events(user_id, seq) WHERE fanout_after IS NOT NULL;

-- Whose job this is: claiming takes turns between owners (users), so one user's burst of
-- 20,000 deliveries does not hold back another user's one.
ALTER TABLE queue_jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX queue_jobs_owner_due ON queue_jobs(queue, state, owner, run_at, seq);
CREATE INDEX queue_jobs_queue_due ON queue_jobs(queue, state, run_at);

-- What must have a queue job, for the BullMQ adapter's reconciler to find cheaply every lease:
-- pending deliveries (their lane heads) and recordings waiting for finalize.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(seq) WHERE status = 'pending';
CREATE INDEX sessions_recording_waiting ON sessions(seq) WHERE recording_status = 'waiting';
