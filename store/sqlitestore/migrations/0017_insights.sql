-- Insights (D50): a certificate's insights, enqueued when it is issued
-- (pending), then the signed statement of its signals and bot verdict.
-- Purging the certificate deletes them.
CREATE TABLE insights (
    certificate_id TEXT PRIMARY KEY REFERENCES certificates (id) ON DELETE CASCADE,
    company_id     TEXT NOT NULL,
    status         TEXT NOT NULL,
    statement      TEXT NOT NULL,
    signature      BLOB NOT NULL,
    key_id         TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
