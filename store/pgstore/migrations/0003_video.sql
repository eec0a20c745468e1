-- The converted video of a session, and conversion jobs that gave up.
ALTER TABLE sessions
    ADD COLUMN video_path        text NOT NULL DEFAULT '',
    ADD COLUMN video_bytes       bigint NOT NULL DEFAULT 0,
    ADD COLUMN video_sha256      bytea,
    ADD COLUMN video_duration_ms bigint NOT NULL DEFAULT 0;
ALTER TABLE conversion_jobs ADD COLUMN failed_at timestamptz;
DROP INDEX conversion_jobs_due;
CREATE INDEX conversion_jobs_due ON conversion_jobs (run_after) WHERE failed_at IS NULL;
