-- Browser capture (D32–D37): a property's allowed origins, a session's
-- upload capability, reserved certificate, page and closing time, and what a
-- captured certificate keeps of the browser.
ALTER TABLE properties ADD COLUMN allowed_origins TEXT NOT NULL DEFAULT '[]';
ALTER TABLE sessions ADD COLUMN upload_digest BLOB;
ALTER TABLE sessions ADD COLUMN certificate_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN url TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN closed_at INTEGER;
ALTER TABLE certificates ADD COLUMN client_ip TEXT NOT NULL DEFAULT '';
ALTER TABLE certificates ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
ALTER TABLE certificates ADD COLUMN recording_sha256 BLOB;
ALTER TABLE certificates ADD COLUMN visibility TEXT NOT NULL DEFAULT '';
