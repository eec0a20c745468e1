-- The purge (D26, D43) finds what is past its window by index, in batches:
-- sessions not purged yet, and certificates, by expiry.
CREATE INDEX sessions_expiry ON sessions (expires_at, id) WHERE retention_status <> 'expired';
CREATE INDEX certificates_expiry ON certificates (expires_at, id);
