-- Idempotency keys (D40): the first answer to a paid or state-changing call
-- made with a key, stored in the transaction of the call's effects and
-- replayed to every later call with the key until expires_at. status 0 is
-- a claim of the running transaction, never seen committed: a second
-- transaction inserting the same key waits on the primary key until the
-- first ends, which is what makes calls with one key on many instances
-- run one after the other.
CREATE TABLE idempotency_keys (
    scope       text NOT NULL,
    key         text NOT NULL,
    fingerprint bytea NOT NULL,
    status      integer NOT NULL DEFAULT 0,
    body        bytea NOT NULL DEFAULT '\x',
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
