package e2e_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/signed"
)

// An honest page whose own submit listener hides the form as the consumer
// submits it (a common "Sending…" pattern against double submissions):
// the snippet measures the consent as the submission starts, before the
// page's listeners run, and measures it visible. The recording goes on to
// hold the page's mutation, emitted before the snippet cuts the last
// events, so a replay of the whole recording measures the state after
// the page's listener, not the consent moment. The attestation must not
// call the honest certificate a mismatch.
func TestAttestationSubmitListenerChangesPage(t *testing.T) {
	pages := []attestPage{{
		name: "hides-on-submit",
		body: withBox(""),
		after: `<script>document.querySelector("form").addEventListener("submit", function (e) {
  e.target.style.visibility = "hidden"; // "Sending…": no second click
});</script>`,
		act: clickOn("agree"),
	}}
	s := newAttestStack(t, pages)
	ctx := browser(t)
	w, err := retain.NewWorker(retain.WorkerConfig{Service: s.base.svc, Converter: attestor(t), Videos: s.base.videos,
		TempDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	got := s.run(t, ctx, pages[0])
	if v := got.consents[0].Visibility; !v.Visible || !v.InViewport {
		t.Fatalf("the snippet measured %+v at submit; want the consent visible", v)
	}
	a := s.attest(t, w, got.cert.ID).Attestation
	if a.Status != signed.Attested {
		t.Errorf("an honest page whose submit listener hides the form afterwards: %s %q %+v; want attested", a.Status, a.Reason, a.Differences)
	}
}
