package storetest

import (
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// testCapture checks what browser capture keeps (D32–D37): a property's
// allowed origins and their update, a session's upload digest, reserved
// certificate, page URL and closing time, each chunk read back by its
// sequence number, and a certificate's browser facts.
func testCapture(t *testing.T, s consent.Store) {
	fixture(t, s)
	prop := &consent.Property{ID: "cap-web", CompanyID: "acme", Name: "Capture form",
		AllowedOrigins: []string{"https://forms.acme.example", "http://localhost:8080"}, CreatedAt: t0}
	ses := session("cap-1", "acme", "cap-web")
	ses.UploadDigest = consent.DigestOf("upload-secret")
	ses.CertificateID = "cert-cap"
	ses.URL = "https://forms.acme.example/quote?step=1"
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateProperty(ctx, prop); err != nil {
			return err
		}
		if err := tx.CreateSession(ctx, ses); err != nil {
			return err
		}
		for _, chunk := range []string{`[{"type":4,"timestamp":1}]`, `[{"type":3,"timestamp":2}]`} {
			if err := tx.AppendEvents(ctx, "cap-1", []byte(chunk), t0); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		got := found(t, "Property", prop)(tx.Property(ctx, "cap-web"))
		if !got.AllowsOrigin("http://localhost:8080") || got.AllowsOrigin("http://localhost:8081") {
			t.Errorf("AllowsOrigin compares %v inexactly", got.AllowedOrigins)
		}
		gotSes, err := tx.Session(ctx, "cap-1")
		want := *ses
		want.EventChunks, want.EventBytes = 2, 2*int64(len(`[{"type":4,"timestamp":1}]`))
		want.LastEventAt = t0
		if err != nil {
			t.Errorf("Session: %v", err)
		}
		wantSame(t, &want, gotSes, opts, "Session")
		for seq, want := range []string{`[{"type":4,"timestamp":1}]`, `[{"type":3,"timestamp":2}]`} {
			if b, err := tx.EventChunk(ctx, "cap-1", seq); err != nil || string(b) != want {
				t.Errorf("EventChunk(%d) = %q, %v; want %q", seq, b, err, want)
			}
		}
		_, err = tx.EventChunk(ctx, "cap-1", 2)
		wantCode(t, "EventChunk(past the end)", err, consent.NotFound)
		_, err = tx.EventChunk(ctx, "cap-1", -1)
		wantCode(t, "EventChunk(-1)", err, consent.NotFound)
		_, err = tx.EventChunk(ctx, "nobody", 0)
		wantCode(t, "EventChunk(unknown session)", err, consent.NotFound)
		return nil
	})

	// Closing the session and changing the origins.
	closed := t0.Add(time.Minute)
	prop.AllowedOrigins, prop.Name = nil, "Renamed"
	update(t, s, func(tx consent.Tx) error {
		got, err := tx.Session(ctx, "cap-1")
		if err != nil {
			return err
		}
		got.ClosedAt = closed
		if err := tx.UpdateSession(ctx, got); err != nil {
			return err
		}
		return tx.UpdateProperty(ctx, prop)
	})
	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.UpdateProperty(ctx, &consent.Property{ID: "nope", CompanyID: "acme"})
	})
	wantCode(t, "UpdateProperty(unknown)", err, consent.NotFound)

	cert := certificate("cert-cap", "acme", "cap-web", "cap-1")
	cert.ClientIP = "2001:db8::7"
	cert.UserAgent = "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0"
	cert.RecordingSHA256 = consent.DigestOf(`[{"type":4,"timestamp":1},{"type":3,"timestamp":2}]`)
	cert.Visibility = &consent.Visibility{InViewport: true, Visible: true, FontSizePx: 13.5,
		TextColor: "rgb(17, 17, 17)", BackgroundColor: "rgba(0, 0, 0, 0)", ContrastRatio: 18.88}
	plain := certificate("cert-plain", "acme", "acme-web", "s1")
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateCertificate(ctx, cert); err != nil {
			return err
		}
		return tx.CreateCertificate(ctx, plain)
	})
	view(t, s, func(tx consent.Tx) error {
		gotSes, err := tx.Session(ctx, "cap-1")
		if err != nil || !gotSes.Closed() || !gotSes.ClosedAt.Equal(closed) {
			t.Errorf("ClosedAt = %v, %v; want %v", gotSes.ClosedAt, err, closed)
		}
		found(t, "Property after UpdateProperty", prop)(tx.Property(ctx, "cap-web"))
		for _, want := range []*consent.Certificate{cert, plain} {
			got, err := tx.Certificate(ctx, want.ID)
			if err != nil {
				t.Errorf("Certificate(%s): %v", want.ID, err)
			}
			wantSame(t, want, got, opts, "Certificate(%s)", want.ID)
		}
		return nil
	})
}
