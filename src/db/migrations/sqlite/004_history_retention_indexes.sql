-- WEBHOOK_LOG_RETENTION_DAYS sweeps webhook history by age: these let it find old rows, and
-- events no delivery refers to any more, without scanning whole tables.
CREATE INDEX webhook_log_created ON webhook_log(created_at);
CREATE INDEX webhook_deliveries_created ON webhook_deliveries(created_at);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries(event_id);
CREATE INDEX events_created ON events(created_at);
