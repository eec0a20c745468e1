package consentkit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
)

// FindCertificates answers the newest consent.MaxPage certificates of a
// consumer, newest first, however many there are: it holds at most two
// pages while it reads them, so the ones it lets go must be the oldest.
// Times repeat (the ids break ties), and the certificates are created in
// an order that is neither their ids' nor their times'.
func TestFindCertificatesKeepsTheNewest(t *testing.T) {
	svc, _ := newService(t, consentkit.Config{})
	if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s-find", CompanyID: "acme", PropertyID: "acme-web"}); err != nil {
		t.Fatal(err)
	}
	const n = 2*consent.MaxPage + 137
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		k := (i * 7919) % n // every index once, out of order
		_, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{
			ID: fmt.Sprintf("c-%04d", (k*31)%n), CompanyID: "acme", PropertyID: "acme-web", SessionID: "s-find",
			Email: "lead@example.com", Records: []consent.Record{{Text: "I agree."}},
			CreatedAt: base.Add(time.Duration(k/3) * time.Minute),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := svc.FindCertificates(ctx, "acme", "Lead@Example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != consent.MaxPage {
		t.Fatalf("%d certificates, want %d", len(got), consent.MaxPage)
	}
	// The newest: k from n-1 down; k/3 orders the times, the id breaks ties.
	for i, c := range got {
		if i > 0 && !consent.Newer(got[i-1].CreatedAt, got[i-1].ID, c.CreatedAt, c.ID) {
			t.Fatalf("certificate %d (%s at %s) is not older than the one before it (%s at %s)", i, c.ID, c.CreatedAt, got[i-1].ID, got[i-1].CreatedAt)
		}
	}
	oldestKept := got[len(got)-1].CreatedAt
	if want := base.Add(time.Duration((n-consent.MaxPage)/3) * time.Minute); oldestKept.Before(want) {
		t.Errorf("the oldest certificate answered is of %s; none older than %s should be", oldestKept, want)
	}
}
