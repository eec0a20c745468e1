-- Velocity (D50): a certificate's company's certificates in the hour and
-- the day before it from the same address, email or mobile, counted over
-- index ranges. The digest indexes gain created_at; their earlier uses
-- (lookups by company and digest) read the same prefix.
DROP INDEX certificates_email;
DROP INDEX certificates_mobile;
CREATE INDEX certificates_email ON certificates (company_id, email_digest, created_at) WHERE email_digest IS NOT NULL;
CREATE INDEX certificates_mobile ON certificates (company_id, mobile_digest, created_at) WHERE mobile_digest IS NOT NULL;
CREATE INDEX certificates_client_ip ON certificates (company_id, client_ip, created_at) WHERE client_ip <> '';

-- A company's thresholds of the bot verdict (D50, consent.InsightsRules),
-- as JSON; '{}' holds the defaults.
ALTER TABLE companies ADD COLUMN insights_rules text NOT NULL DEFAULT '{}';
