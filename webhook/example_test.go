package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/optout"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/webhook"
)

// A receiver checks a delivery's signature (Standard Webhooks) with the
// endpoint's secret before it trusts the body. The HMAC-SHA256 is computed
// here as the sender does, so that the example is complete.
func ExampleVerify() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // given when the endpoint was added
	body := []byte(`{"type":"consent.revoked","timestamp":"2026-11-22T10:30:00Z","data":{}}`)
	at := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)

	// What the sender puts in the headers.
	key, _ := webhook.SecretKey(secret)
	id, ts := "msg_1", fmt.Sprint(at.Unix())
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))

	// What the receiver checks, with its own clock (time.Now() in a real one).
	fmt.Println(webhook.Verify(secret, h, body, at.Add(3*time.Second)))
	fmt.Println(webhook.Verify(secret, h, []byte(`{"type":"forged"}`), at))
	fmt.Println(webhook.Verify(secret, h, body, at.Add(time.Hour)))
	// Output:
	// <nil>
	// webhook: signature verification failed: no matching v1 signature
	// webhook: signature verification failed: webhook-timestamp is 1h0m0s away from now
}

// A company's endpoint receives the events it subscribed to. An opt-out
// writes its consent.revoked message as a job in the opt-out's own
// transaction; the Handler, in a jobs.Runner, delivers it, and the
// receiver verifies it.
func ExampleHandler() {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{
		Now:                 func() time.Time { return now },
		WebhookAllowPrivate: true, // the receiver below is on 127.0.0.1
	})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form"})
	svc.StartSession(ctx, consentkit.SessionParams{ID: "s1", CompanyID: "acme", PropertyID: "acme-web"})
	svc.IssueCertificate(ctx, consentkit.CertificateParams{
		ID: "cert-1", CompanyID: "acme", PropertyID: "acme-web", SessionID: "s1",
		Records: []consent.Record{{Text: "I agree to be contacted."}},
	})

	// The receiver: the company's own server.
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err := webhook.Verify(secret, r.Header, body, now); err != nil { // time.Now() in a real receiver
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var event struct {
			Type string
			Data struct {
				CertificateIDs []string `json:"certificate_ids"`
			}
		}
		json.Unmarshal(body, &event)
		fmt.Println("received", event.Type, event.Data.CertificateIDs, strings.HasPrefix(r.Header.Get("webhook-id"), "msg_"))
		w.WriteHeader(http.StatusNoContent) // handle it once per webhook-id, answer quickly
	}))
	defer receiver.Close()

	endpoints := webhook.Endpoints{Service: svc}
	ep, err := endpoints.Add(ctx, webhook.Params{
		CompanyID: "acme",
		URL:       receiver.URL + "/hooks/consent",
		Events:    []string{consent.EventConsentRevoked},
		Secret:    secret, // empty: a new one, returned in ep.Secret
	})
	if err != nil {
		panic(err)
	}

	optout.New(svc).OptOut(ctx, optout.Request{CompanyID: "acme", CertificateID: "cert-1"})

	h, err := webhook.Handler(webhook.Config{
		Service:      svc,
		AllowPrivate: true, // for tests and private deployments only
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	runner, err := jobs.New(jobs.Config{Store: svc.Store(), Now: svc.Now, Handlers: []jobs.Handler{h},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	did, err := runner.RunOnce(ctx, consent.JobWebhook) // go runner.Run(ctx) in a real service
	fmt.Println("delivered:", did, err)

	log, _ := endpoints.Deliveries(ctx, "acme", ep.ID, 0, 50) // newest first
	for _, d := range log {
		fmt.Println(d.EventType, d.Attempt, d.Status, d.At.Format(time.RFC3339))
	}
	// Output:
	// received consent.revoked [cert-1] true
	// delivered: true <nil>
	// consent.revoked 1 204 2026-11-22T10:30:00Z
}
