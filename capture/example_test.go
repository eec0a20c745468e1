package capture_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/memstore"
)

// What the snippet does over HTTP (POST /capture/sessions, …/events,
// …/consent), in Go: start a session on a page of an allowed origin, send
// the recording in numbered chunks, and issue the session's reserved
// certificate when the consumer consents.
func ExampleService_Start() {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme Insurance"})
	svc.AddProperty(ctx, consentkit.PropertyParams{ID: "acme-web", CompanyID: "acme", Name: "Quote form",
		AllowedOrigins: []string{"https://forms.acme.example"}})
	c := capture.New(svc)

	const origin = "https://forms.acme.example" // the browser's Origin header
	started, err := c.Start(ctx, capture.StartRequest{PropertyID: "acme-web", URL: origin + "/quote", Origin: origin})
	if err != nil {
		panic(err)
	}
	fmt.Println("upload token:", strings.HasPrefix(started.UploadToken, capture.UploadTokenPrefix))

	caller := capture.Caller{UploadToken: started.UploadToken, Origin: origin}
	n, err := c.Append(ctx, caller, capture.Chunk{SessionID: started.SessionID, Seq: 0,
		Events: json.RawMessage(`[{"type":4,"data":{"href":"https://forms.acme.example/quote","width":1024,"height":625},"timestamp":1795861800000}]`)})
	fmt.Println("chunks:", n, err)

	cert, err := c.Issue(ctx, caller, capture.Consent{
		SessionID: started.SessionID,
		URL:       origin + "/quote",
		Records:   []consent.Record{{Text: "I agree that Acme may call me.", Types: []string{"tcpa"}}},
		Email:     "jane@example.com",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(cert.ID == started.CertificateID, cert.Origin, cert.CreatedAt.Format(time.RFC3339), !cert.RecordingSHA256.IsZero())

	// Another origin is refused.
	_, err = c.Start(ctx, capture.StartRequest{PropertyID: "acme-web", URL: "https://evil.example/", Origin: "https://evil.example"})
	fmt.Println(err)
	// Output:
	// upload token: true
	// chunks: 1 <nil>
	// true https://forms.acme.example/quote 2026-11-22T10:30:00Z true
	// this origin may not capture sessions for the property
}
