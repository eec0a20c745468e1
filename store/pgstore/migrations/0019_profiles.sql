-- Audit profiles (D51): a company's named rules that a verification may
-- grade a certificate by. The rules are JSON text (consent.ProfileRules).
CREATE TABLE profiles (
    company_id text NOT NULL REFERENCES companies (id),
    name       text NOT NULL,
    rules      text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (company_id, name)
);
