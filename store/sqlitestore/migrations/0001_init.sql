-- Money is INTEGER micro-dollars (D1); times are INTEGER microseconds since
-- the Unix epoch, UTC; digests are 32-byte SHA-256 BLOBs.

CREATE TABLE companies (
    id                       TEXT PRIMARY KEY,
    name                     TEXT NOT NULL,
    third_party_enabled      INTEGER NOT NULL DEFAULT 0,
    authorized_third_parties TEXT NOT NULL DEFAULT '[]', -- JSON array of company ids
    created_at               INTEGER NOT NULL
) STRICT;

-- The wallet is its own row so that charges lock nothing else (D4).
CREATE TABLE wallets (
    company_id TEXT PRIMARY KEY REFERENCES companies (id),
    balance    INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0)
) STRICT;

CREATE TABLE ledger (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    company_id TEXT NOT NULL REFERENCES companies (id),
    kind       TEXT NOT NULL,
    amount     INTEGER NOT NULL CHECK (amount > 0),
    reference  TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX ledger_company ON ledger (company_id, seq);

CREATE TABLE properties (
    id         TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id),
    name       TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE tokens (
    id          TEXT PRIMARY KEY,
    company_id  TEXT NOT NULL REFERENCES companies (id),
    digest      BLOB NOT NULL UNIQUE,
    permissions TEXT NOT NULL DEFAULT '[]', -- JSON array
    expires_at  INTEGER,
    revoked_at  INTEGER,
    created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE sessions (
    id               TEXT PRIMARY KEY,
    company_id       TEXT NOT NULL REFERENCES companies (id),
    property_id      TEXT NOT NULL REFERENCES properties (id),
    retention_status TEXT NOT NULL,
    video_status     TEXT NOT NULL,
    event_chunks     INTEGER NOT NULL DEFAULT 0,
    event_bytes      INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL
) STRICT;

-- The recording, kept as the chunks it arrived in, byte for byte.
CREATE TABLE session_events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    data       BLOB NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE certificates (
    id               TEXT PRIMARY KEY,
    company_id       TEXT NOT NULL REFERENCES companies (id),
    property_id      TEXT NOT NULL REFERENCES properties (id),
    session_id       TEXT NOT NULL REFERENCES sessions (id),
    origin           TEXT NOT NULL,
    records          BLOB NOT NULL,
    events_combined  BLOB NOT NULL,
    email_digest     BLOB,
    mobile_digest    BLOB,
    retention_status TEXT NOT NULL,
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    revoked_at       INTEGER
) STRICT;
-- Opt-out looks certificates up by digest within a company, never by scan (D17).
CREATE INDEX certificates_email ON certificates (company_id, email_digest) WHERE email_digest IS NOT NULL;
CREATE INDEX certificates_mobile ON certificates (company_id, mobile_digest) WHERE mobile_digest IS NOT NULL;
CREATE INDEX certificates_session ON certificates (session_id);

-- Revocations outlive the certificates they revoked (D19): no foreign key to them.
CREATE TABLE revocations (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    company_id      TEXT NOT NULL REFERENCES companies (id),
    certificate_id  TEXT NOT NULL DEFAULT '',
    email_digest    BLOB,
    mobile_digest   BLOB,
    reason          TEXT NOT NULL DEFAULT '',
    client_ip       TEXT NOT NULL DEFAULT '',
    certificate_ids TEXT NOT NULL DEFAULT '[]', -- JSON array
    created_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX revocations_company ON revocations (company_id, seq);
