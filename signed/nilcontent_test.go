package signed

import (
	"testing"
	"time"
)

// A certificate issued unsigned (before UnsignedBefore) has no "signed"
// content in certificate-info, yet a service with keys signs the
// statements made of it later: an offline check handing the answer's nil
// content to StatementProof.Verify or InsightsProof.Verify must be told
// so, not crash.
func TestStatementVerifyNilContent(t *testing.T) {
	k, err := NewSigningKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	keys := Publish([]PublicKey{k.Public()})
	d := Document{V: Version1, ID: "cert-1", CompanyID: "acme", CreatedAt: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	c := d.Content()

	st, err := NewStatement(&c, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	st.Status = Attested
	sig, err := k.SignStatement(&st)
	if err != nil {
		t.Fatal(err)
	}
	ist, err := NewInsightsStatement(&c, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	ist.Bot.Verdict = "human"
	isig, err := k.SignInsights(&ist)
	if err != nil {
		t.Fatal(err)
	}

	for name, verify := range map[string]func() error{
		"StatementProof.Verify": func() error {
			p := StatementProof{Signature: EncodeSignature(sig), KeyID: k.ID, Statement: &st}
			return p.Verify(&keys, nil)
		},
		"InsightsProof.Verify": func() error {
			p := InsightsProof{Signature: EncodeSignature(isig), KeyID: k.ID, Statement: &ist}
			return p.Verify(&keys, nil)
		},
		"VerifyStatement": func() error { return VerifyStatement(&st, nil, k.Public(), sig) },
		"VerifyInsights":  func() error { return VerifyInsights(&ist, nil, k.Public(), isig) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panics on a nil certificate content: %v", r)
				}
			}()
			if err := verify(); err == nil {
				t.Fatal("verifies a statement against no certificate content")
			}
		})
	}
}
