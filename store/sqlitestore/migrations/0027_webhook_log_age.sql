-- The purge deletes delivery-log entries and webhook messages given up
-- once they are older than the log is kept (D44): the oldest first.
CREATE INDEX webhook_deliveries_at ON webhook_deliveries (at, seq);
CREATE INDEX jobs_failed ON jobs (kind, failed_at, key) WHERE failed_at IS NOT NULL;
