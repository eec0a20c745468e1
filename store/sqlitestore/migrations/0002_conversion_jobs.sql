-- One job per retained session, enqueued in the same transaction as the
-- retention and its charge (D22). Leases are held by a worker until
-- lease_until; a job whose lease ran out is taken again.
CREATE TABLE conversion_jobs (
    session_id  TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    attempts    INTEGER NOT NULL DEFAULT 0,
    run_after   INTEGER NOT NULL,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_until INTEGER,
    last_error  TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX conversion_jobs_due ON conversion_jobs (run_after);
