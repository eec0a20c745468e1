-- The audit log (D42): each company's chain of entries, and the chain's head
-- (its last seq and hash) in a row of its own, so that a deleted last entry
-- is noticed. Appends lock the head row, so instances sharing the database
-- take turns per company. No foreign key to sessions or certificates: the
-- log outlives their purge (D43).
CREATE TABLE audit_log (
    company_id text NOT NULL REFERENCES companies (id),
    seq        bigint NOT NULL,
    at         timestamptz NOT NULL,
    actor      text NOT NULL,
    action     text NOT NULL,
    target     text NOT NULL DEFAULT '',
    outcome    text NOT NULL,
    request_id text NOT NULL DEFAULT '',
    detail     text NOT NULL DEFAULT '',
    prev_hash  bytea NOT NULL,
    hash       bytea NOT NULL,
    PRIMARY KEY (company_id, seq)
);
CREATE INDEX audit_log_target ON audit_log (company_id, target, seq);

CREATE TABLE audit_heads (
    company_id text PRIMARY KEY REFERENCES companies (id),
    seq        bigint NOT NULL,
    hash       bytea NOT NULL
);

-- Append-only, as far as the database can say so: entries are never
-- changed or deleted, and a head only moves forward, one entry at a time.
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'audit_heads'
        AND NEW.company_id = OLD.company_id AND NEW.seq IN (OLD.seq, OLD.seq + 1) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only';
END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_heads_forward BEFORE UPDATE OR DELETE ON audit_heads
    FOR EACH ROW EXECUTE FUNCTION audit_append_only();
CREATE TRIGGER audit_heads_no_truncate BEFORE TRUNCATE ON audit_heads
    FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
