-- Webhook endpoints of each company and the delivery log of each endpoint
-- (D44). The messages themselves wait in the job queue (kind 'webhook'),
-- which is the outbox. Deleting an endpoint deletes its log.
CREATE TABLE webhook_endpoints (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          text NOT NULL UNIQUE,
    company_id  text NOT NULL REFERENCES companies (id),
    url         text NOT NULL,
    secret      text NOT NULL,
    events      text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    disabled_at timestamptz
);
CREATE INDEX webhook_endpoints_company ON webhook_endpoints (company_id, seq);

CREATE TABLE webhook_deliveries (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    message_id  text NOT NULL,
    event_type  text NOT NULL,
    attempt     integer NOT NULL,
    at          timestamptz NOT NULL,
    status      integer NOT NULL,
    error       text NOT NULL DEFAULT '',
    duration_us bigint NOT NULL
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, seq);
