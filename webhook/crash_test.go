package webhook_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/store/sqlitestore"
	"github.com/consentkit/consentkit/webhook"
)

// crashChildVar, set, makes the test binary the child of
// TestCrashAfterCommit: it holds the SQLite database path and the
// receiver's URL.
const crashChildVar = "CONSENTKIT_WEBHOOK_CRASH_CHILD"

// crashChild sets up a company with a certificate and a webhook endpoint,
// commits an opt-out, says so on stdout and waits to be killed, without
// ever running a delivery.
func crashChild() int {
	db, url, _ := strings.Cut(os.Getenv(crashChildVar), " ")
	fail := func(err error) int { fmt.Println("error:", err); return 1 }
	st, err := sqlitestore.Open(db, sqlitestore.Config{})
	if err != nil {
		return fail(err)
	}
	if err := st.Migrate(ctx); err != nil {
		return fail(err)
	}
	svc, err := consentkit.NewService(st, consentkit.Config{WebhookAllowPrivate: true})
	if err != nil {
		return fail(err)
	}
	steps := []func() error{
		func() error {
			_, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"})
			return err
		},
		func() error {
			_, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"})
			return err
		},
		func() error {
			_, err := svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "web"})
			return err
		},
		func() error {
			_, err := svc.IssueCertificate(ctx, consentkit.CertificateParams{ID: "cert-1", CompanyID: "acme", PropertyID: "web",
				SessionID: "s1", Email: email, Records: []consent.Record{{Text: "I agree."}}})
			return err
		},
		func() error {
			_, err := webhook.Endpoints{Service: svc}.Add(ctx, webhook.Params{CompanyID: "acme", URL: url, Secret: secret,
				Events: []string{consent.EventConsentRevoked}})
			return err
		},
		func() error {
			_, err := optout.New(svc).OptOut(ctx, optout.Request{CompanyID: "acme", Email: email})
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fail(err)
		}
	}
	fmt.Println("committed")
	time.Sleep(time.Minute) // killed long before
	return 1
}

// TestCrashAfterCommit: a process that commits an opt-out and dies at once
// (SIGKILL, before any delivery) leaves the message in the outbox; the
// next process to run the job runner on the database delivers it.
func TestCrashAfterCommit(t *testing.T) {
	rc := newReceiver(t)
	db := filepath.Join(t.TempDir(), "consent.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildVar+"="+db+" "+rc.URL)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // killed below, unless the test ended before
		_ = cmd.Wait()         // killed: the status says only that
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "committed" {
		t.Fatalf("child said %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred code, no clean close
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: the status says only that
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("receiver got %d requests before any runner ran", n)
	}

	st, err := sqlitestore.Open(db, sqlitestore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	teststore.CloseAtEnd(t, st)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	svc, err := consentkit.NewService(st, consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := webhook.Handler(webhook.Config{Service: svc, AllowPrivate: true, Logger: quiet, Timeout: patient})
	if err != nil {
		t.Fatal(err)
	}
	r, err := jobs.New(jobs.Config{Store: st, Handlers: []jobs.Handler{h}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if ran, err := r.RunOnce(ctx, consent.JobWebhook); err != nil || !ran {
		t.Fatalf("RunOnce after the crash: %v, %v; want the message delivered", ran, err)
	}
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests; want 1", len(got))
	}
	checkSignature(t, secret, got[0])
	ev := decode(t, got[0].Body)
	if ev.Type != consent.EventConsentRevoked || fmt.Sprint(ev.Data["certificate_ids"]) != "[cert-1]" {
		t.Errorf("delivered %s; want consent.revoked of cert-1", got[0].Body)
	}
}
