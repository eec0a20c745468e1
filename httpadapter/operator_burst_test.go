package httpadapter_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// yieldingClock lets other goroutines run each time it is read: requests
// sent at once then interleave at every reading of the clock, as requests
// on many connections and cores do.
func yieldingClock() time.Time {
	runtime.Gosched()
	return created
}

// A burst of wrong operator secrets sent at once is looked at no more than
// OperatorFailuresPerMinute times: each takes its token before its secret
// is compared (and gives it back when the secret is right), so that
// concurrent guesses cannot all be compared before the first is counted
// and a right one among them cannot be told by its answer.
func TestOperatorSecretBurstLimited(t *testing.T) {
	const burst = 4 * httpadapter.OperatorFailuresPerMinute
	svc, err := consentkit.NewService(teststore.Memory(t), consentkit.Config{Now: yieldingClock})
	must(t, err)
	var logged bytes.Buffer // slog's handler writes one record at a time
	h, err := httpadapter.New(httpadapter.Config{Service: svc, OperatorSecret: operatorSecret,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	must(t, err)
	op := h.Operator()
	codes := make([]int, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			req := httptest.NewRequest("GET", "/operator/companies", nil)
			req.RemoteAddr = "203.0.113.9:5000"
			req.Header.Set("Authorization", "Bearer wrong guess "+strings.Repeat("x", i))
			rec := httptest.NewRecorder()
			op.ServeHTTP(rec, req)
			codes[i] = rec.Code
		})
	}
	wg.Wait()
	n401, n429 := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusUnauthorized:
			n401++
		case http.StatusTooManyRequests:
			n429++
		default:
			t.Errorf("a wrong secret answered %d", c)
		}
	}
	compared := strings.Count(logged.String(), "wrong operator secret")
	if n401 != httpadapter.OperatorFailuresPerMinute || n429 != burst-n401 || compared != n401 {
		t.Errorf("%d wrong secrets at once: %d answered 401, %d 429, %d compared; want %d compared and answered 401, the rest 429",
			burst, n401, n429, compared, httpadapter.OperatorFailuresPerMinute)
	}
}
