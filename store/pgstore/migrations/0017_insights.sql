-- Insights (D50): a certificate's insights, enqueued when it is issued
-- (pending), then the signed statement of its signals and bot verdict.
-- Purging the certificate deletes them.
CREATE TABLE insights (
    certificate_id text PRIMARY KEY REFERENCES certificates (id) ON DELETE CASCADE,
    company_id     text NOT NULL,
    status         text NOT NULL,
    statement      text NOT NULL,
    signature      bytea NOT NULL,
    key_id         text NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);
