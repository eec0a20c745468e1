-- The waiting jobs of each kind by company (D49): an attestation's ask
-- counts the company's and the kind's in the transaction that enqueues it,
-- from this index alone, instead of reading every job of the kind.
CREATE INDEX jobs_waiting ON jobs (kind, company_id) WHERE failed_at IS NULL;
