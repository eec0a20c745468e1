-- Evidence, signature version 2 (D41): the time of the company's latest
-- revocation of the consumer before a certificate was issued (NULL: none),
-- and the version of the canonical encoding its signature covers (0:
-- unsigned). Certificates signed before this migration are of version 1.
ALTER TABLE certificates ADD COLUMN revoked_before timestamptz;
ALTER TABLE certificates ADD COLUMN signature_version integer NOT NULL DEFAULT 0
    CHECK (signature_version BETWEEN 0 AND 2);
UPDATE certificates SET signature_version = 1 WHERE length(signature) > 0;
-- Tx.RevokedBefore finds a company's latest revocation of a digest.
CREATE INDEX revocations_email ON revocations (company_id, email_digest, created_at) WHERE email_digest IS NOT NULL;
CREATE INDEX revocations_mobile ON revocations (company_id, mobile_digest, created_at) WHERE mobile_digest IS NOT NULL;
-- Published public keys (D41): every key that verifies certificates, by
-- its id, so that instances sharing the store know each other's keys and
-- never sign under one id with two keys. A published key never changes.
CREATE TABLE public_keys (
    id         text COLLATE "C" PRIMARY KEY,
    public_key bytea NOT NULL CHECK (length(public_key) = 32),
    created_at timestamptz NOT NULL
);
CREATE FUNCTION public_keys_fixed() RETURNS trigger LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'a published key never changes'; END $$;
CREATE TRIGGER public_keys_fixed BEFORE UPDATE OR DELETE ON public_keys
    FOR EACH ROW EXECUTE FUNCTION public_keys_fixed();
CREATE TRIGGER public_keys_no_truncate BEFORE TRUNCATE ON public_keys
    FOR EACH STATEMENT EXECUTE FUNCTION public_keys_fixed();
