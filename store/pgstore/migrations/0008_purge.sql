-- The purge (D26, D43) finds what is past its window by index, in batches:
-- sessions not purged yet, and certificates, by expiry. Ids are ordered
-- byte by byte (COLLATE "C"), as every store orders them, so that the
-- purge's ORDER BY reads the index instead of sorting what has expired.
CREATE INDEX sessions_expiry ON sessions (expires_at, id COLLATE "C") WHERE retention_status <> 'expired';
CREATE INDEX certificates_expiry ON certificates (expires_at, id COLLATE "C");
