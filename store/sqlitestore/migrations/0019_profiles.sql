-- Audit profiles (D51): a company's named rules that a verification may
-- grade a certificate by. The rules are JSON text (consent.ProfileRules).
CREATE TABLE profiles (
    company_id TEXT NOT NULL REFERENCES companies (id),
    name       TEXT NOT NULL,
    rules      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (company_id, name)
) STRICT, WITHOUT ROWID;
