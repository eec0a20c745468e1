-- Fair leasing of jobs (D53): the company a job works for and its lane (at
-- most one leased job per lane: a webhook endpoint's deliveries go one at a
-- time). Webhook jobs already queued get their endpoint as lane and its
-- company. The partial index holds the leased jobs only, which LeaseJob
-- counts per company and lane.
ALTER TABLE jobs ADD COLUMN company_id TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN lane TEXT NOT NULL DEFAULT '';
UPDATE jobs SET lane = substr(key, instr(key, ':') + 1) WHERE kind = 'webhook' AND instr(key, ':') > 0;
UPDATE jobs SET company_id = coalesce((SELECT e.company_id FROM webhook_endpoints e WHERE e.id = jobs.lane), '')
    WHERE kind = 'webhook';
CREATE INDEX jobs_leased ON jobs (lease_until) WHERE lease_until IS NOT NULL;
