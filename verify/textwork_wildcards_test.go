package verify_test

import (
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/verify"
)

// A profile's approved texts are walked whole for every consent: one of
// 1,999 wildcards visits each of its 2,000 parts against each of a
// certificate's consents, however short they are. Fifty such texts (500 KB,
// a profile a company may write for itself) against 100 one-line consents
// are about ten million steps, several hundred times what a write
// transaction may hold the store for (maxTextWorkInTx, about 4 MiB of
// text); TextWork, counting only the consents' bytes, says 40,000, so the
// grade was made inside the write transaction. It must be made before it.
func TestManyWildcardsGradedBeforeTheTransaction(t *testing.T) {
	texts := make([]string, profile.MaxProfileTexts)
	for i := range texts {
		texts[i] = strings.Repeat(profile.Wildcard, profile.MaxApprovedText/len(profile.Wildcard)-1) + "z"
	}
	rules := profile.Rules{ApprovedLanguage: &profile.LanguageRule{Texts: texts}}
	st := &profileReads{Store: memstore.New()}
	svc := textEnv(t, st, rules)
	records := make([]consent.Record, 100)
	for i := range records {
		records[i] = consent.Record{Text: "I agree to be called by Acme."}
	}
	if _, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "many", CompanyID: "acme", PropertyID: "web", SessionID: "s1", Records: records}); err != nil {
		t.Fatal(err)
	}
	st.inView, st.inUpdate = 0, 0
	res, err := verify.New(svc).Match(ctx, "acme", verify.MatchRequest{CertificateID: "many", CompanyID: "acme", Consent: "x", Profile: "texts"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Audit == nil || res.Audit.Result != profile.Fail {
		t.Errorf("graded %+v, want fail", res.Audit)
	}
	if st.inView != 1 {
		t.Errorf("profile read in %d read-only transactions, want 1: %d consents x %d approved texts of %d wildcards graded inside the write transaction (TextWork %d)",
			st.inView, len(records), len(texts), strings.Count(texts[0], profile.Wildcard), profile.TextWork(&rules, records))
	}
}
