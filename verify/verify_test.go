package verify_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/verify"
	"github.com/consentkit/consentkit/wallet"
)

var ctx = context.Background()

func setup(t *testing.T, records ...consent.Record) *verify.Service {
	t.Helper()
	st := memstore.New()
	svc, err := consentkit.NewService(st, consentkit.Config{})
	steps := []error{err}
	_, err = svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
	steps = append(steps, err)
	_, err = svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
	steps = append(steps, err)
	_, err = svc.TopUp(ctx, "acme", wallet.Dollar, "")
	steps = append(steps, err)
	_, err = svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"})
	steps = append(steps, err)
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "c1", CompanyID: "acme", PropertyID: "web", SessionID: "s1", Records: records})
	steps = append(steps, err)
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	return verify.New(svc)
}

// Partial match compares by Unicode simple case folding (D11).
func TestPartialMatchFolding(t *testing.T) {
	s := setup(t, consent.Record{Text: "Ο ΣΊΣΥΦΟΣ agrees to 10 KELVIN of Straße-level consent", OptInAt: time.Now()})
	for _, tc := range []struct {
		term string
		want bool
	}{
		{"σίσυφος", true},        // final sigma folds with Σ
		{"10 kelvin", true},      // plain k
		{"10 \u212aelvin", true}, // KELVIN SIGN folds with k
		{"STRASSE", false},       // ß is not ss under simple folding
		{"straße-LEVEL", true},
		{"agreed", false},
	} {
		res, err := s.PartialMatch(ctx, "acme", verify.PartialMatchRequest{CertificateID: "c1", CompanyID: "acme", Term: tc.term})
		if err != nil || res.Valid != tc.want {
			t.Errorf("PartialMatch(%q) = %+v, %v; want valid %v", tc.term, res, err, tc.want)
		}
	}
}

// Exact match trims white space on both sides and nothing else (D10).
func TestMatchExactness(t *testing.T) {
	s := setup(t, consent.Record{Text: "  I agree.\n", OptInAt: time.Now()})
	for _, tc := range []struct {
		consent string
		want    bool
	}{
		{"I agree.", true},
		{"\tI agree. ", true},
		{"I  agree.", false},
		{"I agree", false},
		{"i agree.", false},
		{"I agree.\u00a0x", false},
	} {
		res, err := s.Match(ctx, "acme", verify.MatchRequest{CertificateID: "c1", CompanyID: "acme", Consent: tc.consent})
		if err != nil || res.Valid != tc.want {
			t.Errorf("Match(%q) = %+v, %v; want valid %v", tc.consent, res, err, tc.want)
		}
	}
	if res, _ := s.Match(ctx, "acme", verify.MatchRequest{CertificateID: "c1", CompanyID: "acme", Consent: "I agree."}); res.Charged != 15000 || res.Balance != wallet.Dollar-7*15000 {
		t.Errorf("charged %s, balance %s after 7 checks", res.Charged, res.Balance)
	}
}

// Consent text of white space alone is no text to match: refused, not
// charged, as a blank partial-match term is. It would otherwise equal the
// empty text of a consent hidden whole (D47) and be answered valid.
func TestBlankConsentRefused(t *testing.T) {
	s := setup(t, consent.Record{Text: "", OptInAt: time.Now(),
		Visibility: &consent.Visibility{FontSizePx: 12, ContrastRatio: 4.5, HiddenText: []string{"I agree to robocalls."}}})
	for _, blank := range []string{"", "   ", "\t\n"} {
		res, err := s.Match(ctx, "acme", verify.MatchRequest{CertificateID: "c1", CompanyID: "acme", Consent: blank})
		if consent.ErrorCode(err) != consent.Invalid || !strings.Contains(err.Error(), "consent is required") {
			t.Errorf("Match(%q) = %+v, %v; want Invalid, consent is required", blank, res, err)
		}
		_, err = s.PartialMatch(ctx, "acme", verify.PartialMatchRequest{CertificateID: "c1", CompanyID: "acme", Term: blank})
		if consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("PartialMatch(%q): %v; want Invalid", blank, err)
		}
	}
}

// countingStore counts the transactions run on a store.
type countingStore struct {
	consent.Store
	views, updates int
}

func (c *countingStore) View(ctx context.Context, fn func(consent.Tx) error) error {
	c.views++
	return c.Store.View(ctx, fn)
}

func (c *countingStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	c.updates++
	return c.Store.Update(ctx, fn)
}

// A certificate without a recording is verified in one write transaction;
// one with a recording has it read first (D41). The first verification of
// such a certificate learns that it has one in a write transaction that
// rolls back — nothing charged, nothing audited — and the ones after it
// read the recording first.
func TestRecordingReadOnlyWhenThereIsOne(t *testing.T) {
	const text = "I agree."
	st := &countingStore{Store: memstore.New()}
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	recording := json.RawMessage(`[{"type":4,"data":{"href":"https://acme.example/"},"timestamp":1}]`)
	steps := []error{}
	for _, step := range []func() (any, error){
		func() (any, error) { return svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}) },
		func() (any, error) {
			return svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
		},
		func() (any, error) { return svc.TopUp(ctx, "acme", wallet.Dollar, "") },
		func() (any, error) {
			return svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"})
		},
		func() (any, error) { return svc.AppendEvents(ctx, "s1", recording) },
		func() (any, error) {
			return svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "plain", CompanyID: "acme", PropertyID: "web",
				SessionID: "s1", Records: []consent.Record{{Text: text}}})
		},
		func() (any, error) {
			return svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "recorded", CompanyID: "acme", PropertyID: "web",
				SessionID: "s1", Records: []consent.Record{{Text: text}}, RecordingSHA256: sha256.Sum256(recording)})
		},
	} {
		_, err := step()
		steps = append(steps, err)
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	v := verify.New(svc)
	for _, c := range []struct {
		id             string
		views, updates int
	}{
		{"plain", 0, 1},
		{"plain", 0, 1},
		{"recorded", 1, 2}, // learns that it has a recording
		{"recorded", 1, 1},
		{"recorded", 1, 1},
	} {
		st.views, st.updates = 0, 0
		res, err := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: c.id, CompanyID: "acme", Consent: text})
		if err != nil || !res.Valid {
			t.Fatalf("Match(%s) = %+v, %v; want valid", c.id, res, err)
		}
		if st.views != c.views || st.updates != c.updates {
			t.Errorf("Match(%s) ran %d read and %d write transactions, want %d and %d", c.id, st.views, st.updates, c.views, c.updates)
		}
	}
	var ledger []*wallet.Entry
	var audit []*consent.AuditEntry
	if err := st.View(ctx, func(tx consent.Tx) error {
		var err error
		if ledger, err = tx.Ledger(ctx, "acme"); err != nil {
			return err
		}
		audit, err = tx.AuditEntries(ctx, consent.AuditQuery{CompanyID: "acme", Limit: 100})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	charged := map[string]int{}
	for _, e := range ledger {
		if e.Kind == wallet.ExactMatch {
			charged[e.Reference]++
		}
	}
	audited := map[string]int{}
	for _, e := range audit {
		if e.Action == consent.AuditVerifyMatch {
			audited[e.Target]++
		}
	}
	want := map[string]int{"plain": 2, "recorded": 3}
	if fmt.Sprint(charged) != fmt.Sprint(want) || fmt.Sprint(audited) != fmt.Sprint(want) {
		t.Errorf("charges %v and audit entries %v per certificate, want %v of each", charged, audited, want)
	}
}

// chunkReads counts the recording chunks read in read-only transactions.
type chunkReads struct {
	consent.Store
	chunks int
}

func (c *chunkReads) View(ctx context.Context, fn func(consent.Tx) error) error {
	return c.Store.View(ctx, func(tx consent.Tx) error { return fn(chunkReadsTx{tx, &c.chunks}) })
}

type chunkReadsTx struct {
	consent.Tx
	chunks *int
}

func (t chunkReadsTx) EachEventChunk(ctx context.Context, sessionID string, fn func([]byte) error) error {
	return t.Tx.EachEventChunk(ctx, sessionID, func(b []byte) error {
		*t.chunks++
		return fn(b)
	})
}

// recordedFixture is a Service on st with companies acme and globex, each
// with a dollar, and acme's certificate "recorded" of text, issued with
// the SHA-256 of its session's recording.
func recordedFixture(t *testing.T, st consent.Store, text string) *consentkit.Service {
	t.Helper()
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	recording := json.RawMessage(`[{"type":4,"data":{"href":"https://acme.example/"},"timestamp":1}]`)
	var steps []error
	for _, id := range []string{"acme", "globex"} {
		_, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: id, Name: id})
		steps = append(steps, err)
		_, err = svc.TopUp(ctx, id, wallet.Dollar, "")
		steps = append(steps, err)
	}
	_, err = svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
	steps = append(steps, err)
	_, err = svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"})
	steps = append(steps, err)
	_, err = svc.AppendEvents(ctx, "s1", recording)
	steps = append(steps, err)
	_, err = svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "recorded", CompanyID: "acme", PropertyID: "web",
		SessionID: "s1", Records: []consent.Record{{Text: text}}, RecordingSHA256: sha256.Sum256(recording)})
	steps = append(steps, err)
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

// A recording is read for its integrity check (D41) only for a caller
// that may verify its certificate: another company, as first party or as
// a third party the owner has not authorized, is refused without it, so
// that the refusal costs no hashing and takes no longer for a certificate
// with a recording than for an unknown id (D9). Once authorized, the third
// party's verification reads it.
func TestRecordingReadOnlyForTheAuthorized(t *testing.T) {
	const text = "I agree."
	st := &chunkReads{Store: memstore.New()}
	svc := recordedFixture(t, st, text)
	v := verify.New(svc)
	match := func(caller, originator string) (int, error) {
		st.chunks = 0
		_, err := v.Match(ctx, caller, verify.MatchRequest{CertificateID: "recorded", CompanyID: caller, OriginatorCompanyID: originator, Consent: text})
		return st.chunks, err
	}
	if n, err := match("acme", ""); err != nil || n != 1 {
		t.Fatalf("the owner's match: %v, %d chunks read; want 1", err, n)
	}
	if n, err := match("globex", ""); consent.ErrorCode(err) != consent.NotFound || n != 0 {
		t.Errorf("another company's match: %v, %d chunks read; want not found and none", err, n)
	}
	if n, err := match("globex", "acme"); consent.ErrorCode(err) != consent.Forbidden || n != 0 {
		t.Errorf("an unauthorized third party's match: %v, %d chunks read; want forbidden and none", err, n)
	}
	if _, err := svc.SetThirdParty(ctx, "acme", true, []string{"globex"}); err != nil {
		t.Fatal(err)
	}
	if n, err := match("globex", "acme"); err != nil || n != 1 {
		t.Errorf("an authorized third party's match: %v, %d chunks read; want 1", err, n)
	}
}

// flipping withdraws globex's authorization before every read-only
// transaction and gives it back before every write transaction, once on.
type flipping struct {
	*chunkReads
	on      bool
	inWrite int // chunks read in write transactions
}

func (f *flipping) authorize(ctx context.Context, yes bool) error {
	return f.chunkReads.Store.Update(ctx, func(tx consent.Tx) error {
		co, err := tx.Company(ctx, "acme")
		if err != nil {
			return err
		}
		co.ThirdPartyVerificationEnabled, co.AuthorizedThirdParties = true, nil
		if yes {
			co.AuthorizedThirdParties = []string{"globex"}
		}
		return tx.UpdateCompany(ctx, co)
	})
}

func (f *flipping) View(ctx context.Context, fn func(consent.Tx) error) error {
	if f.on {
		if err := f.authorize(ctx, false); err != nil {
			return err
		}
	}
	return f.chunkReads.View(ctx, fn)
}

func (f *flipping) Update(ctx context.Context, fn func(consent.Tx) error) error {
	if f.on {
		if err := f.authorize(ctx, true); err != nil {
			return err
		}
	}
	return f.chunkReads.Store.Update(ctx, func(tx consent.Tx) error { return fn(chunkReadsTx{tx, &f.inWrite}) })
}

// A third party authorized between the read of the recording (where it
// was not, so nothing was read) and the write transaction is verified,
// its recording read in the write transaction: never a failure for a
// race the caller cannot see.
func TestRecordingReadWhenAuthorizedMeanwhile(t *testing.T) {
	const text = "I agree."
	st := &flipping{chunkReads: &chunkReads{Store: memstore.New()}}
	svc := recordedFixture(t, st, text)
	v := verify.New(svc)
	if _, err := v.Match(ctx, "acme", verify.MatchRequest{CertificateID: "recorded", CompanyID: "acme", Consent: text}); err != nil {
		t.Fatal(err) // the certificate is known to have a recording from now on
	}
	st.on, st.chunks, st.inWrite = true, 0, 0
	res, err := v.Match(ctx, "globex", verify.MatchRequest{CertificateID: "recorded", CompanyID: "globex", OriginatorCompanyID: "acme", Consent: text})
	if err != nil || !res.Valid || st.chunks != 0 || st.inWrite != 1 {
		t.Errorf("Match = %+v, %v; %d chunks read in read-only transactions, %d in write ones; want valid, read in the write transaction",
			res, err, st.chunks, st.inWrite)
	}
}
