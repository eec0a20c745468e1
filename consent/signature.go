package consent

import (
	"github.com/consentkit/consentkit/signed"
)

// Signed certificates (D41): package signed holds the signed document, its
// canonical encoding and the keys; this file signs the certificates the
// Service issues and checks them.

// ErrIntegrity is the refusal of a certificate whose content, or whose
// session's recording, no longer matches what was signed or hashed when it
// was issued (D41): code Conflict, so the API answers 409.
var ErrIntegrity = Errorf(Conflict, "certificate integrity check failed")

// Signed returns what c's signature covers, as the API shows it.
func Signed(c *Certificate) signed.Content {
	d := Document(c, nil)
	return d.Content()
}

// document returns the signed document of c; its consents are appended
// to consents.
func Document(c *Certificate, consents []signed.DocumentConsent) signed.Document {
	for _, r := range c.Records {
		consents = append(consents, signed.DocumentConsent{Text: r.Text, Types: r.Types, OptInAt: r.OptInAt})
	}
	return signed.Document{ID: c.ID, CompanyID: c.CompanyID, PropertyID: c.PropertyID, SessionID: c.SessionID,
		Consents: consents, Origin: c.Origin, CreatedAt: c.CreatedAt, EmailSHA256: c.EmailDigest,
		MobileSHA256: c.MobileDigest, RecordingSHA256: c.RecordingSHA256, KeyID: c.KeyID}
}
