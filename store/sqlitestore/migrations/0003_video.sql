-- The converted video of a session, and conversion jobs that gave up.
ALTER TABLE sessions ADD COLUMN video_path TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN video_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN video_sha256 BLOB;
ALTER TABLE sessions ADD COLUMN video_duration_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversion_jobs ADD COLUMN failed_at INTEGER;
DROP INDEX conversion_jobs_due;
CREATE INDEX conversion_jobs_due ON conversion_jobs (run_after) WHERE failed_at IS NULL;
