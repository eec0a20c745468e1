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
	var logged syncBuffer
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

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// When the limiter of wrong secrets holds as many clients as it may, each
// with wrong secrets spent, a new client's secret is still compared: a
// spray of addresses cannot lock the operator out (D28's exception for
// wrong secrets), and a wrong one is still refused.
func TestOperatorNotLockedOutAtKeyCap(t *testing.T) {
	e := setup(t, teststore.Memory(t))
	h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret, MaxLimiterKeys: 2,
		Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	op := h.Operator()
	call := func(addr, secret string) int {
		req := httptest.NewRequest("GET", "/operator/companies", nil)
		req.RemoteAddr = addr
		req.Header.Set("Authorization", "Bearer "+secret)
		rec := httptest.NewRecorder()
		op.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, sprayer := range []string{"203.0.113.1:1000", "203.0.113.2:1000"} {
		if code := call(sprayer, "wrong guess"); code != http.StatusUnauthorized {
			t.Fatalf("a wrong secret from %s: %d, want 401", sprayer, code)
		}
	}
	if code := call("198.51.100.2:6000", operatorSecret); code != http.StatusOK {
		t.Errorf("the right secret from a new address while the limiter is full: %d, want 200", code)
	}
	if code := call("198.51.100.3:6000", "wrong guess"); code != http.StatusUnauthorized {
		t.Errorf("a wrong secret from a new address while the limiter is full: %d, want 401", code)
	}
}
