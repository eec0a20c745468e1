package httpadapter_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/webhook"
)

// Concurrent PUTs of new profiles and POSTs of new webhook endpoints never
// leave a company past consent.MaxProfiles or webhook.MaxEndpoints, on a
// PostgreSQL store with group commit off (store.GroupCommit{Off: true}).
func TestCompanyCapsHoldUnderConcurrentCreates(t *testing.T) {
	e := setup(t, teststore.PostgresWithoutGroupCommit(t))
	h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	op := h.Operator()
	send := func(method, path, body string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header.Set("Authorization", "Bearer "+operatorSecret)
		op.ServeHTTP(httptest.NewRecorder(), req)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			send("PUT", fmt.Sprintf("/operator/companies/acme/profiles/p%02d", i), `{"attestation":{}}`)
		}()
		go func() {
			defer wg.Done()
			send("POST", "/operator/companies/acme/webhooks", `{"url":"https://hooks.example/x","events":["certificate.issued"]}`)
		}()
	}
	wg.Wait()
	_, ps := opCall(t, op, "GET", "/operator/companies/acme/profiles", operatorSecret, "")
	if n := len(asList(ps["profiles"])); n > consent.MaxProfiles {
		t.Errorf("acme holds %d profiles, past the %d allowed", n, consent.MaxProfiles)
	}
	_, ws := opCall(t, op, "GET", "/operator/companies/acme/webhooks", operatorSecret, "")
	if n := len(asList(ws["endpoints"])); n > webhook.MaxEndpoints {
		t.Errorf("acme holds %d webhook endpoints, past the %d allowed", n, webhook.MaxEndpoints)
	}
}
