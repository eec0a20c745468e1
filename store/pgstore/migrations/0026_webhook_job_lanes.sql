-- The lane and company of the webhook jobs still queued, again (D53).
-- 0021 gave a job queued before it the lane of split_part(key, ':', 2),
-- which cuts an endpoint id holding ':' short (no company found), and the
-- company of the endpoint that then had the job's endpoint id, even an
-- endpoint created after the job: the job's endpoint deleted and its id
-- taken by another company, the old message went to that company's URL,
-- signed with its secret. A job's lane is everything after the first ':'
-- of its key (message ids hold none, endpoint ids may); its company is
-- its endpoint's only if that endpoint was created at or before the job,
-- else '' (the deliverer drops the job: no endpoint is of company '').
-- Only rows that change are written, so running it twice changes nothing.
UPDATE jobs SET lane = substr(key, strpos(key, ':') + 1)
    WHERE kind = 'webhook' AND strpos(key, ':') > 0 AND lane <> substr(key, strpos(key, ':') + 1);
UPDATE jobs SET company_id = e.company_id FROM webhook_endpoints e
    WHERE jobs.kind = 'webhook' AND e.id = jobs.lane AND e.created_at <= jobs.created_at
        AND jobs.company_id <> e.company_id;
UPDATE jobs SET company_id = ''
    WHERE kind = 'webhook' AND company_id <> '' AND NOT EXISTS (SELECT 1 FROM webhook_endpoints e
        WHERE e.id = jobs.lane AND e.created_at <= jobs.created_at);
