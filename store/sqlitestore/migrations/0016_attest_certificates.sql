-- A company may have every certificate it issues attested (D49,
-- attest_certificates). Off for the companies there are.
ALTER TABLE companies ADD COLUMN attest_certificates INTEGER NOT NULL DEFAULT 0;
