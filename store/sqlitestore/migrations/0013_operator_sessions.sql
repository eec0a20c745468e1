-- Logins to the operator's dashboard, kept so that a logout on one instance
-- ends the session on every instance sharing the store. Only the digest of
-- the session's secret is kept (the browser's cookie holds the secret).
-- Expired sessions stay until PruneOperatorSessions deletes them, earliest
-- first (then by digest), reading the index in order.
CREATE TABLE operator_sessions (
    digest     BLOB NOT NULL PRIMARY KEY CHECK (length(digest) = 32),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL CHECK (expires_at > created_at)
) STRICT, WITHOUT ROWID;
CREATE INDEX operator_sessions_expiry ON operator_sessions (expires_at, digest);
