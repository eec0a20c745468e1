-- The company of the jobs queued before 0021 (D53), which gave it to
-- webhook jobs only: an attestation's or an insights job's is its
-- certificate's (the job's key is the certificate's id), a conversion's its
-- session's (the key is the session's id). Left '', the company's share of
-- the queue (CountCompanyJobs, fair leasing) did not count them. A job
-- whose certificate or session is gone keeps ''.
UPDATE jobs SET company_id = coalesce((SELECT c.company_id FROM certificates c WHERE c.id = jobs.key), '')
    WHERE kind IN ('attest', 'insights') AND company_id = '';
UPDATE jobs SET company_id = coalesce((SELECT s.company_id FROM sessions s WHERE s.id = jobs.key), '')
    WHERE kind = 'convert' AND company_id = '';
