-- The operator surface (issue 14) lists a company's things by creation:
-- properties and tokens oldest first; ledger entries, certificates,
-- sessions and revocations newest first, page by page, each page starting
-- after the (created_at, id) where the last one ended (consent.Page). Each
-- list reads one of these indexes in order, however deep the page.
CREATE INDEX properties_company ON properties (company_id, created_at, id);
CREATE INDEX tokens_company ON tokens (company_id, created_at, id);
CREATE INDEX ledger_company_created ON ledger (company_id, created_at, id);
CREATE INDEX certificates_company_created ON certificates (company_id, created_at, id);
CREATE INDEX sessions_company_created ON sessions (company_id, created_at, id);
CREATE INDEX revocations_company_created ON revocations (company_id, created_at, id);
