-- Idempotency keys (D40): the first answer to a paid or state-changing call
-- made with a key, stored in the transaction of the call's effects and
-- replayed to every later call with the key until expires_at. status 0 is
-- a claim of the running transaction, never seen committed.
CREATE TABLE idempotency_keys (
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    status      INTEGER NOT NULL DEFAULT 0,
    body        BLOB NOT NULL DEFAULT x'',
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) STRICT;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
