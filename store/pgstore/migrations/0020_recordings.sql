-- Finished recordings in the blob store (D52): when a session last took a
-- chunk, and the object its recording was moved to (key, size, digest,
-- time). The partial index finds the recordings still to move; a session
-- recorded before this migration counts as last active when it was created,
-- so that its recording moves too.
ALTER TABLE sessions
    ADD COLUMN last_event_at    timestamptz,
    ADD COLUMN recording_key    text NOT NULL DEFAULT '',
    ADD COLUMN recording_bytes  bigint NOT NULL DEFAULT 0,
    ADD COLUMN recording_sha256 bytea,
    ADD COLUMN recording_at     timestamptz;
UPDATE sessions SET last_event_at = created_at WHERE event_chunks > 0;
CREATE INDEX sessions_to_move ON sessions (last_event_at, id) WHERE event_chunks > 0 AND recording_at IS NULL;
