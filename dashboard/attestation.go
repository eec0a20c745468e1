package dashboard

import (
	"fmt"
	"net/http"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/byterange"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/signed"
)

// attestationView is a certificate's attestation (D49) as its page shows
// it: the status of the row, and once measured the signed statement's
// facts with whether it holds.
type attestationView struct {
	Status string
	// Statement is nil while pending, or when the stored statement cannot
	// be read (Check then says so).
	Statement  *signed.Statement
	MeasuredAt string // the statement's time as the page shows times
	Signed     bool
	KeyID      string
	// Check is "" when the status holds
	// (consentkit.Service.CheckAttestation), else why it cannot be
	// trusted: the page then shows the status as not verified.
	Check string
	// Screenshot: the replay's PNG can be shown (Config.Videos is set and
	// the replay took one).
	Screenshot bool
}

// attestationView returns what the page shows of a, a certificate's
// attestation, which check (consentkit.StatementIntegrityError's
// Reason, "" when it holds) found; nil when none was asked for. A
// statement that does not hold is a finding to show, not an error.
func (h *Handler) attestationView(a *consent.Attestation, check string) *attestationView {
	if a == nil {
		return nil
	}
	v := &attestationView{Status: a.Status, Signed: len(a.Signature) > 0, KeyID: a.KeyID, Check: check,
		Screenshot: h.cfg.Videos != nil && a.Screenshot != ""}
	proof, err := a.Proof()
	if err != nil || proof == nil {
		return v
	}
	st := proof.Statement
	v.Statement, v.MeasuredAt = st, st.MeasuredAt
	if t, err := time.Parse(time.RFC3339Nano, st.MeasuredAt); err == nil {
		v.MeasuredAt = t.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return v
}

// screenshot serves the PNG of the viewport at the certificate's consent
// moment that its attestation's replay took (D49): only under the
// certificate's own company, only when Config.Videos is set, and only a
// screenshot that a signed statement of the certificate states, as the
// Retain API's route serves it (retain.Service.Screenshot).
func (h *Handler) screenshot(w http.ResponseWriter, r *http.Request, p *page) error {
	c, err := h.companyOf(r.Context(), r)
	if err != nil {
		return err
	}
	if h.cfg.Videos == nil {
		return consent.Errorf(consent.NotFound, "no screenshot for this certificate")
	}
	ctx := r.Context()
	a, err := retain.New(h.svc).Screenshot(ctx, c.ID, c.ID, r.PathValue("certificate"))
	if err != nil {
		return err
	}
	f, err := h.cfg.Videos.Open(ctx, a.ScreenshotFile())
	if err != nil {
		return fmt.Errorf("open the screenshot of certificate %s: %w", a.CertificateID, err)
	}
	defer func() { _ = f.Close() }() // read only: its Close loses nothing
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	byterange.ServeContent(w, r, "", a.UpdatedAt, f)
	p.done = true
	return nil
}
