-- One job per retained session, enqueued in the same transaction as the
-- retention and its charge (D22). Leases are held by a worker until
-- lease_until; a job whose lease ran out is taken again.
CREATE TABLE conversion_jobs (
    session_id  text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    attempts    integer NOT NULL DEFAULT 0,
    run_after   timestamptz NOT NULL,
    lease_owner text NOT NULL DEFAULT '',
    lease_until timestamptz,
    last_error  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL
);
CREATE INDEX conversion_jobs_due ON conversion_jobs (run_after);
