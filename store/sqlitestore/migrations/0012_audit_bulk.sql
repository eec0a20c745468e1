-- A head may also move forward by several entries at once, onto an entry
-- already in the log with the head's hash: AppendAudits (issue 13) writes a
-- batch's entries in one statement and then moves the head once. Entries
-- are still never changed or deleted, and a head never moves back, to
-- another company, or past the end of its chain.
DROP TRIGGER audit_heads_forward;
CREATE TRIGGER audit_heads_forward BEFORE UPDATE ON audit_heads
WHEN NEW.company_id IS NOT OLD.company_id OR NOT (NEW.seq IN (OLD.seq, OLD.seq + 1)
    OR NEW.seq > OLD.seq AND EXISTS (SELECT 1 FROM audit_log
        WHERE company_id = NEW.company_id AND seq = NEW.seq AND hash = NEW.hash))
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
