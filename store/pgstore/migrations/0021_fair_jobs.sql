-- Fair leasing of jobs (D53): the company a job works for and its lane (at
-- most one leased job per lane: a webhook endpoint's deliveries go one at a
-- time). Webhook jobs already queued get their endpoint as lane and its
-- company. The partial index holds the leased jobs only, which LeaseJob
-- counts per company and lane.
ALTER TABLE jobs
    ADD COLUMN company_id text NOT NULL DEFAULT '',
    ADD COLUMN lane       text NOT NULL DEFAULT '';
UPDATE jobs SET lane = split_part(key, ':', 2) WHERE kind = 'webhook';
UPDATE jobs SET company_id = e.company_id FROM webhook_endpoints e WHERE jobs.kind = 'webhook' AND e.id = jobs.lane;
CREATE INDEX jobs_leased ON jobs (lease_until) WHERE lease_until IS NOT NULL;
