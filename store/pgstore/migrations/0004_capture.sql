-- Browser capture (D32–D37): a property's allowed origins, a session's
-- upload capability, reserved certificate, page and closing time, and what a
-- captured certificate keeps of the browser.
ALTER TABLE properties ADD COLUMN allowed_origins text[] NOT NULL DEFAULT '{}';
ALTER TABLE sessions
    ADD COLUMN upload_digest  bytea,
    ADD COLUMN certificate_id text NOT NULL DEFAULT '',
    ADD COLUMN url            text NOT NULL DEFAULT '',
    ADD COLUMN closed_at      timestamptz;
ALTER TABLE certificates
    ADD COLUMN client_ip        text NOT NULL DEFAULT '',
    ADD COLUMN user_agent       text NOT NULL DEFAULT '',
    ADD COLUMN recording_sha256 bytea,
    ADD COLUMN visibility       text NOT NULL DEFAULT '';
