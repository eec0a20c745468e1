-- Webhook endpoints of each company and the delivery log of each endpoint
-- (D44). The messages themselves wait in the job queue (kind 'webhook'),
-- which is the outbox. Deleting an endpoint deletes its log.
CREATE TABLE webhook_endpoints (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    company_id  TEXT NOT NULL REFERENCES companies (id),
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    events      TEXT NOT NULL DEFAULT '[]', -- JSON array of event types
    created_at  INTEGER NOT NULL,
    disabled_at INTEGER
) STRICT;
CREATE INDEX webhook_endpoints_company ON webhook_endpoints (company_id, seq);

CREATE TABLE webhook_deliveries (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    message_id  TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    status      INTEGER NOT NULL,
    error       TEXT NOT NULL DEFAULT '',
    duration_us INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, seq);
