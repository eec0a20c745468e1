-- Due jobs in the order LeaseJob takes them (D53): a lease walks this
-- index to the first job of a company holding no lease, instead of sorting
-- every due job. It replaces jobs_due, whose queries it serves too.
CREATE INDEX jobs_due_order ON jobs (run_after, kind, key) WHERE failed_at IS NULL;
DROP INDEX jobs_due;
