-- Attestations (D49): a certificate's attestation, asked for (pending),
-- then the signed statement of what a replay of its recording measured.
-- The screenshot lives in the video store; the row holds its key. Purging
-- the certificate deletes it.
CREATE TABLE attestations (
    certificate_id TEXT PRIMARY KEY REFERENCES certificates (id) ON DELETE CASCADE,
    company_id     TEXT NOT NULL,
    status         TEXT NOT NULL,
    statement      TEXT NOT NULL,
    signature      BLOB NOT NULL,
    key_id         TEXT NOT NULL,
    screenshot     TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
