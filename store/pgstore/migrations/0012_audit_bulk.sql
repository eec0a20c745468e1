-- A head may also move forward by several entries at once, onto an entry
-- already in the log with the head's hash: AppendAudits (issue 13) writes a
-- batch's entries in one statement and then moves the head once. Entries
-- are still never changed or deleted, and a head never moves back, to
-- another company, or past the end of its chain. The log is looked up in
-- the schema of the table that fired the trigger, whatever the search_path.
CREATE OR REPLACE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found boolean;
BEGIN
    IF TG_OP = 'UPDATE' AND TG_TABLE_NAME = 'audit_heads' AND NEW.company_id = OLD.company_id THEN
        IF NEW.seq IN (OLD.seq, OLD.seq + 1) THEN
            RETURN NEW;
        END IF;
        IF NEW.seq > OLD.seq THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.audit_log WHERE company_id = $1 AND seq = $2 AND hash = $3)',
                TG_TABLE_SCHEMA) INTO found USING NEW.company_id, NEW.seq, NEW.hash;
            IF found THEN
                RETURN NEW;
            END IF;
        END IF;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only';
END $$;
