-- Money is bigint micro-dollars (D1); times are timestamptz (microseconds);
-- digests are 32-byte SHA-256 values.

CREATE TABLE companies (
    id                       text PRIMARY KEY,
    name                     text NOT NULL,
    third_party_enabled      boolean NOT NULL DEFAULT false,
    authorized_third_parties text[] NOT NULL DEFAULT '{}',
    created_at               timestamptz NOT NULL
);

-- The wallet is its own row so that charges lock nothing else (D4).
CREATE TABLE wallets (
    company_id text PRIMARY KEY REFERENCES companies (id),
    balance    bigint NOT NULL DEFAULT 0 CHECK (balance >= 0)
);

CREATE TABLE ledger (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id         text NOT NULL UNIQUE,
    company_id text NOT NULL REFERENCES companies (id),
    kind       text NOT NULL,
    amount     bigint NOT NULL CHECK (amount > 0),
    reference  text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);
CREATE INDEX ledger_company ON ledger (company_id, seq);

CREATE TABLE properties (
    id         text PRIMARY KEY,
    company_id text NOT NULL REFERENCES companies (id),
    name       text NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE tokens (
    id          text PRIMARY KEY,
    company_id  text NOT NULL REFERENCES companies (id),
    digest      bytea NOT NULL UNIQUE,
    permissions text[] NOT NULL DEFAULT '{}',
    expires_at  timestamptz,
    revoked_at  timestamptz,
    created_at  timestamptz NOT NULL
);

CREATE TABLE sessions (
    id               text PRIMARY KEY,
    company_id       text NOT NULL REFERENCES companies (id),
    property_id      text NOT NULL REFERENCES properties (id),
    retention_status text NOT NULL,
    video_status     text NOT NULL,
    event_chunks     integer NOT NULL DEFAULT 0,
    event_bytes      bigint NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL
);

-- The recording, kept as the chunks it arrived in, byte for byte.
CREATE TABLE session_events (
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        integer NOT NULL,
    data       bytea NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE certificates (
    id               text PRIMARY KEY,
    company_id       text NOT NULL REFERENCES companies (id),
    property_id      text NOT NULL REFERENCES properties (id),
    session_id       text NOT NULL REFERENCES sessions (id),
    origin           text NOT NULL,
    records          jsonb NOT NULL,
    events_combined  json NOT NULL, -- json, not jsonb: kept byte for byte
    email_digest     bytea,
    mobile_digest    bytea,
    retention_status text NOT NULL,
    created_at       timestamptz NOT NULL,
    expires_at       timestamptz NOT NULL,
    revoked_at       timestamptz
);
-- Opt-out looks certificates up by digest within a company, never by scan (D17).
CREATE INDEX certificates_email ON certificates (company_id, email_digest) WHERE email_digest IS NOT NULL;
CREATE INDEX certificates_mobile ON certificates (company_id, mobile_digest) WHERE mobile_digest IS NOT NULL;
CREATE INDEX certificates_session ON certificates (session_id);

-- Revocations outlive the certificates they revoked (D19): no foreign key to them.
CREATE TABLE revocations (
    seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              text NOT NULL UNIQUE,
    company_id      text NOT NULL REFERENCES companies (id),
    certificate_id  text NOT NULL DEFAULT '',
    email_digest    bytea,
    mobile_digest   bytea,
    reason          text NOT NULL DEFAULT '',
    client_ip       text NOT NULL DEFAULT '',
    certificate_ids text[] NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL
);
CREATE INDEX revocations_company ON revocations (company_id, seq);
