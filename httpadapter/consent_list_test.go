package httpadapter_test

import (
	"strings"
	"testing"

	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/testmem"
	"github.com/consentkit/consentkit/store/memstore"
)

// A consent body of empty consent objects ("{},", 3 bytes each, up to the
// route's ~2 MiB limit) is refused without being expanded: each item was
// decoded into a 72-byte struct and copied into a 96-byte consent.Record
// before the Service's limit of 100 consents refused it, ~230 MiB of heap
// for one anonymous request.
func TestConsentListBoundedWhileDecoding(t *testing.T) {
	_, h := capturing(t, memstore.New(), httpadapter.Config{CapturePerMinute: -1, CaptureStartsPerMinute: -1,
		CaptureBytesPerMinute: -1, CapturePropertyBytesPerMinute: -1})
	s := startSession(t, h)
	n := (2<<20 - 64) / 3
	body := `{"consents":[` + strings.Repeat(`{},`, n-1) + `{}],"url":"` + formPage + `"}`
	var code int
	var out string
	peak := testmem.Peak(func() {
		rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/consent", formOrigin, s.UploadToken, body)
		code, out = rec.Code, rec.Body.String()
	})
	if code != 400 || !strings.Contains(out, "consents") {
		t.Errorf("%d consents: %d %s, want 400 naming consents", n, code, out)
	}
	if limit := uint64(32 << 20); peak > limit {
		t.Errorf("a %d-byte body took %.0f MiB of heap, want at most %d MiB", len(body), float64(peak)/(1<<20), limit>>20)
	}
}
