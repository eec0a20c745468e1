-- Attestations (D49): a certificate's attestation, asked for (pending),
-- then the signed statement of what a replay of its recording measured.
-- The screenshot lives in the video store; the row holds its key. Purging
-- the certificate deletes it.
CREATE TABLE attestations (
    certificate_id text PRIMARY KEY REFERENCES certificates (id) ON DELETE CASCADE,
    company_id     text NOT NULL,
    status         text NOT NULL,
    statement      text NOT NULL,
    signature      bytea NOT NULL,
    key_id         text NOT NULL,
    screenshot     text NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);
