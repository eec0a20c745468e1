-- The audit log (D42): each company's chain of entries, and the chain's head
-- (its last seq and hash) in a row of its own, so that a deleted last entry
-- is noticed. Appends lock the head row. No foreign key to sessions or
-- certificates: the log outlives their purge (D43).
CREATE TABLE audit_log (
    company_id TEXT NOT NULL REFERENCES companies (id),
    seq        INTEGER NOT NULL,
    at         INTEGER NOT NULL, -- microseconds since the Unix epoch, UTC
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    target     TEXT NOT NULL DEFAULT '',
    outcome    TEXT NOT NULL,
    request_id TEXT NOT NULL DEFAULT '',
    detail     TEXT NOT NULL DEFAULT '',
    prev_hash  BLOB NOT NULL,
    hash       BLOB NOT NULL,
    PRIMARY KEY (company_id, seq)
) STRICT, WITHOUT ROWID;
CREATE INDEX audit_log_target ON audit_log (company_id, target, seq);

CREATE TABLE audit_heads (
    company_id TEXT PRIMARY KEY REFERENCES companies (id),
    seq        INTEGER NOT NULL,
    hash       BLOB NOT NULL
) STRICT;

-- Append-only, as far as the database can say so: entries are never
-- changed or deleted, and a head only moves forward, one entry at a time.
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_heads_no_delete BEFORE DELETE ON audit_heads
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_heads_forward BEFORE UPDATE ON audit_heads
WHEN NEW.company_id IS NOT OLD.company_id OR NEW.seq NOT IN (OLD.seq, OLD.seq + 1)
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
