package consent

import (
	"github.com/consentkit/consentkit/signed"
)

// Signed certificates (D41): package signed holds the signed document, its
// canonical encoding and the keys; this file maps a Certificate to it.

// ErrIntegrity is the refusal of a certificate whose content, or whose
// session's recording, no longer matches what was signed or hashed when it
// was issued (D41): code Conflict, so the API answers 409.
var ErrIntegrity = Errorf(Conflict, "certificate integrity check failed")

// Signed returns what c's signature covers, as the API shows it.
func Signed(c *Certificate) signed.Content {
	d := Document(c, nil)
	return d.Content()
}

// Document returns the signed document of c, the bytes its signature
// covers (signed.Document.AppendEncoding), in the version of c's
// SignatureVersion (version 1 when 0: an unsigned certificate is checked
// for nothing but its recording); its consents are appended to consents,
// which may be nil.
func Document(c *Certificate, consents []signed.DocumentConsent) signed.Document {
	v2 := c.SignatureVersion == 2
	for _, r := range c.Records {
		dc := signed.DocumentConsent{Text: r.Text, Types: r.Types, OptInAt: r.OptInAt}
		if v2 {
			dc.OptInMethod, dc.Visibility = r.OptInMethod, signedVisibility(r.Visibility)
		}
		consents = append(consents, dc)
	}
	d := signed.Document{V: signed.Version1, ID: c.ID, CompanyID: c.CompanyID, PropertyID: c.PropertyID, SessionID: c.SessionID,
		Consents: consents, Origin: c.Origin, CreatedAt: c.CreatedAt, EmailSHA256: c.EmailDigest,
		MobileSHA256: c.MobileDigest, RecordingSHA256: c.RecordingSHA256, KeyID: c.KeyID}
	if v2 {
		d.V, d.ClientIP, d.UserAgent = signed.Version2, c.ClientIP, c.UserAgent
		d.Visibility, d.RevokedBefore = signedVisibility(c.Visibility), c.RevokedBefore
	}
	return d
}

func signedVisibility(v *Visibility) *signed.Visibility {
	if v == nil {
		return nil
	}
	return &signed.Visibility{InViewport: v.InViewport, Visible: v.Visible, FontSizePx: v.FontSizePx, TextColor: v.TextColor,
		BackgroundColor: v.BackgroundColor, ContrastRatio: v.ContrastRatio, HiddenText: v.HiddenText}
}
