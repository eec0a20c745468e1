-- The waiting jobs of each kind by company (D49): an attestation's ask
-- counts the company's and the kind's in the transaction that enqueues it,
-- from this index alone, instead of reading every job of the kind.
-- failed_at, always NULL here, is a column so that SQLite reads nothing
-- but the index: it does not take the WHERE for the column's value.
CREATE INDEX jobs_waiting ON jobs (kind, company_id, failed_at) WHERE failed_at IS NULL;
