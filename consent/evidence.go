package consent

import "time"

// Evidence is what an Attestation (D49) and Insights (D50) hold alike: the
// state of a job's signed statement of one certificate, pending until the
// job has run. A store keeps one row of each kind a certificate, deleted
// with the certificate.
type Evidence struct {
	CertificateID string
	CompanyID     string
	Status        string
	// Statement is the signed statement's JSON, with its Signature and
	// KeyID; empty while pending.
	Statement []byte
	Signature []byte
	KeyID     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Check checks e before a store writes it: its keys, texts and times.
func (e *Evidence) Check() error { return e.check() }

// check checks e's keys, its status and key id and then texts (pairs of a
// field's name and its value), its statement and its times, in that order.
func (e *Evidence) check(texts ...string) error {
	if err := CheckKeys("certificate_id", e.CertificateID, "company_id", e.CompanyID); err != nil {
		return err
	}
	if err := checkTexts(append([]string{"status", e.Status, "key_id", e.KeyID}, texts...)...); err != nil {
		return err
	}
	if !ValidText(string(e.Statement)) {
		return Errorf(Invalid, "statement must be valid UTF-8 text")
	}
	return checkTimes([]string{"created_at", "updated_at"}, e.CreatedAt, e.UpdatedAt)
}
