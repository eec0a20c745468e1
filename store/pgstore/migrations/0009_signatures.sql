-- Signed certificates (D41): the id of the key that signed a certificate
-- and its Ed25519 signature over the canonical encoding; empty for one
-- issued without a signing key.
ALTER TABLE certificates ADD COLUMN key_id text NOT NULL DEFAULT '';
ALTER TABLE certificates ADD COLUMN signature bytea NOT NULL DEFAULT '\x';
