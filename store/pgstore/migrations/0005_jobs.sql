-- One job queue for all background work (conversions, purge, webhook
-- deliveries): a job is named by its kind and a key unique within the kind,
-- and carries its handler's payload. The conversion jobs move into it with
-- kind 'convert' and the session id as key. Jobs do not reference the rows
-- they are about: a purge deletes sessions, and the queue must not lose a
-- job (or refuse the delete) because of it.
CREATE TABLE jobs (
    kind        text NOT NULL,
    key         text NOT NULL,
    payload     bytea NOT NULL DEFAULT '\x',
    attempts    integer NOT NULL DEFAULT 0,
    run_after   timestamptz NOT NULL,
    lease_owner text NOT NULL DEFAULT '',
    lease_until timestamptz,
    last_error  text NOT NULL DEFAULT '',
    failed_at   timestamptz,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (kind, key)
);
CREATE INDEX jobs_due ON jobs (run_after) WHERE failed_at IS NULL;
INSERT INTO jobs (kind, key, attempts, run_after, lease_owner, lease_until, last_error, failed_at, created_at)
    SELECT 'convert', session_id, attempts, run_after, lease_owner, lease_until, last_error, failed_at, created_at
    FROM conversion_jobs;
DROP TABLE conversion_jobs;
