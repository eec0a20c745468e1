package dashboard

import (
	"strings"

	"github.com/consentkit/consentkit/consent"
)

// LoginClients returns how many clients the login limit holds.
func LoginClients(h *Handler) int { return h.logins.Len() }

// SessionDigest returns the store's key of a login cookie's session.
func SessionDigest(cookie string) consent.Digest {
	sec, _, _ := strings.Cut(cookie, ".")
	return consent.DigestOf(sec)
}
