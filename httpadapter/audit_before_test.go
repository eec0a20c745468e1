package httpadapter_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
)

// GET …/audit with a before past 2^31-1 reads the log as every other
// store does: PostgreSQL must not answer 500 because the query types
// $3 (before) as int4 from "$3 = 0".
func TestAuditBeforePastInt32(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e := setup(t, open(t))
		h, err := httpadapter.New(httpadapter.Config{Service: e.svc, OperatorSecret: operatorSecret,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		must(t, err)
		for _, q := range []string{"before=2147483648", "before=9223372036854775807&order=newest&limit=2"} {
			code, body := opCall(t, h.Operator(), "GET", "/operator/companies/acme/audit?"+q, operatorSecret, "")
			if code != 200 || len(asList(body["entries"])) == 0 {
				t.Errorf("GET …/audit?%s: %d %v; want 200 with acme's entries", q, code, body)
			}
		}
	})
}
