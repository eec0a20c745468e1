package httpadapter_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/httpadapter"
)

// A client's byte budget bounds the bytes of its capture bodies read in a
// minute (D52), a consent's body larger than what the client may spend at
// once too: such a body may pass when the client has spent nothing for a
// while, but it must be paid for in full, not for the eighth of a minute
// it was charged. Here the budget is 96 KiB a minute (12 KiB at once, the
// largest chunk's body), which New accepts, and a client sends a consent
// of 1 MiB every 7.5 s: the server reads 9 MiB of its bodies in a minute.
func TestCaptureClientByteBudgetBoundsLargeConsents(t *testing.T) {
	e, h := budgetEnv(t, httpadapter.Config{CaptureBytesPerMinute: 96 << 10, CapturePropertyBytesPerMinute: -1,
		CapturePerMinute: -1})
	body := `{"pad":"` + strings.Repeat("x", 1<<20-200) + `","consents":[{"text":"I agree."}],"url":"` + formPage + `"}`
	var read int64
	var codes []int
	for range 9 { // a minute: now, and every eighth of it
		req := httptest.NewRequest("POST", "/capture/sessions/ses_nosuch/consent", &countingReader{r: strings.NewReader(body), n: &read})
		req.ContentLength = int64(len(body))
		req.Header.Set("Origin", formOrigin)
		req.Header.Set("Authorization", "Bearer bogus")
		req.RemoteAddr = "203.0.113.77:1000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		codes = append(codes, rec.Code)
		e.clock.t = e.clock.t.Add(time.Minute / 8)
	}
	// At most the minute's budget, and one body over what the client may
	// spend at once, which a client that spent nothing may send.
	if limit := int64(96<<10 + len(body)); read > limit {
		t.Errorf("one client had %d KiB of its capture bodies read in a minute (answered %v); its budget is 96 KiB a minute, want at most %d KiB",
			read>>10, codes, limit>>10)
	}
}
