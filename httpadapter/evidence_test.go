package httpadapter_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/signed"
)

// A consent body with each consent's own visibility and opt-in method
// (D37), sent by a consumer who had opted out before: certificate-info
// shows each consent's facts and revoked_before, the match answers say
// revoked_before, and the signed content (version 2) covers all of it.
// A body of a snippet cached before, with one visibility, is still taken.
func TestCaptureEvidence(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		e, _ := capturing(t, open(t), httpadapter.Config{})
		key, err := signed.NewSigningKey("key-1")
		must(t, err)
		e.svc, err = consentkit.NewService(e.store, consentkit.Config{Now: e.clock.Now, SigningKeys: []signed.SigningKey{key}})
		must(t, err)
		h := e.handler(t, httpadapter.Config{})
		if rec := serve(h, request{path: "/opt-out", body: `{"company_id":"acme","email":"jane@example.com"}`}); rec.Code != 200 {
			t.Fatalf("opt-out: %d %s", rec.Code, rec.Body)
		}
		give := func(body string) started {
			t.Helper()
			s := startSession(t, h)
			if rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/events", formOrigin, s.UploadToken, `{"seq":0,"events":`+rrwebChunk+`}`); rec.Code != 200 {
				t.Fatalf("chunk: %d %s", rec.Code, rec.Body)
			}
			if rec := call(h, "POST", "/capture/sessions/"+s.SessionID+"/consent", formOrigin, s.UploadToken, body); rec.Code != 201 {
				t.Fatalf("consent: %d %s", rec.Code, rec.Body)
			}
			return s
		}
		s := give(`{"consents":[` +
			`{"text":"I agree to be called by Acme.","types":["tcpa"],"opt_in_method":"manual","node_id":42,` +
			`"visibility":{"in_viewport":true,"visible":false,"font_size_px":16,"text_color":"rgb(0, 0, 0)","background_color":"rgb(255, 255, 255)","contrast_ratio":21,"hidden_text":["and 500 partners"]}},` +
			`{"text":"Send me offers.","types":["marketing"],"opt_in_method":"pre_selected",` +
			`"visibility":{"in_viewport":true,"visible":true,"font_size_px":1,"text_color":"rgb(254, 254, 254)","background_color":"rgb(255, 255, 255)","contrast_ratio":1.01,"hidden_text":[]}}],` +
			`"email":"Jane@Example.com","url":"` + formPage + `",` +
			`"visibility":{"in_viewport":true,"visible":false,"font_size_px":16,"text_color":"rgb(0, 0, 0)","background_color":"rgb(255, 255, 255)","contrast_ratio":21,"hidden_text":["and 500 partners"]}}`)

		info := serve(h, request{path: "/verify/certificate-info", token: acmeToken,
			body: `{"certificate_id":"` + s.CertificateID + `","company_id":"acme","property_id":"acme-form"}`})
		var got struct {
			Consents []struct {
				Text        string             `json:"text"`
				OptInMethod string             `json:"opt_in_method"`
				Visibility  consent.Visibility `json:"visibility"`
			} `json:"consents"`
			RevokedBefore string              `json:"revoked_before"`
			Visibility    *consent.Visibility `json:"consent_visibility"`
			signed.Proof
		}
		must(t, json.Unmarshal(info.Body.Bytes(), &got))
		if info.Code != 200 || len(got.Consents) != 2 || got.RevokedBefore == "" || got.Visibility == nil {
			t.Fatalf("certificate-info: %d %s", info.Code, info.Body)
		}
		first, second := got.Consents[0], got.Consents[1]
		// The element's node id is kept, for a replay to find it, and not
		// shown: it asserts nothing.
		must(t, e.svc.Store().View(ctx, func(tx consent.Tx) error {
			c, err := tx.Certificate(ctx, s.CertificateID)
			if err == nil && (c.Records[0].NodeID != 42 || c.Records[1].NodeID != 0) {
				t.Errorf("node ids kept: %d, %d; want 42, 0", c.Records[0].NodeID, c.Records[1].NodeID)
			}
			return err
		}))
		if strings.Contains(info.Body.String(), "node_id") {
			t.Errorf("certificate-info shows node_id: %s", info.Body)
		}
		if first.OptInMethod != "manual" || first.Visibility.Visible || strings.Join(first.Visibility.HiddenText, "|") != "and 500 partners" ||
			second.OptInMethod != "pre_selected" || second.Visibility.FontSizePx != 1 || second.Visibility.ContrastRatio != 1.01 {
			t.Errorf("each consent's facts: %s", info.Body)
		}
		// What is shown is what is signed.
		c := got.Signed
		if c == nil {
			t.Fatalf("certificate-info shows no signed content: %s", info.Body)
		}
		if c.V != signed.Version2 || c.RevokedBefore == "" || len(c.Consents) != 2 || c.Consents[0].OptInMethod != "manual" ||
			c.Consents[0].Visibility == nil || c.Consents[0].Visibility.HiddenText[0] != "and 500 partners" ||
			c.Consents[1].Visibility.ContrastRatio != "1.01" || c.ClientIP != "198.51.100.7" {
			t.Errorf("signed content: %+v", c)
		}

		// The offline check reads the answer as the server writes it: every
		// fact shown is the signed one, and only the unsigned are listed
		// (the insights are a statement signed apart, D50).
		shown, err := signed.CheckShown(info.Body.Bytes())
		if err != nil || shown.Differs != "" || strings.Join(shown.Unsigned, ",") != "events_combined,insights,valid" {
			t.Errorf("signed.CheckShown of the answer: %+v, %v", shown, err)
		}

		for _, path := range []string{"/verify/match", "/verify/partial-match"} {
			body := matchBody(s.CertificateID, "acme", "I agree to be called by Acme.")
			if path == "/verify/partial-match" {
				body = `{"certificate_id":"` + s.CertificateID + `","company_id":"acme","term":"Acme"}`
			}
			rec := serve(h, request{path: path, token: acmeToken, body: body})
			if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"revoked_before":"`+got.RevokedBefore+`"`) {
				t.Errorf("%s: %d %s; want revoked_before %s", path, rec.Code, rec.Body, got.RevokedBefore)
			}
		}

		// A consent the consumer could not see at all has no text, and its
		// hidden text says what it was: the certificate is issued with it.
		// Empty text with nothing hidden is refused.
		hidden := give(`{"consents":[{"text":"I agree to be called by Acme.","types":["tcpa"]},` +
			`{"text":"","types":["tcpa"],"opt_in_method":"none","visibility":{"in_viewport":true,"visible":false,"font_size_px":1,` +
			`"text_color":"rgb(254, 254, 254)","background_color":"rgb(255, 255, 255)","contrast_ratio":1.01,"hidden_text":["and 500 partners"]}}],` +
			`"url":"` + formPage + `"}`)
		info = serve(h, request{path: "/verify/certificate-info", token: acmeToken,
			body: `{"certificate_id":"` + hidden.CertificateID + `","company_id":"acme","property_id":"acme-form"}`})
		if info.Code != 200 || !strings.Contains(info.Body.String(), `{"text":"","types":["tcpa"]`) ||
			!strings.Contains(info.Body.String(), `"hidden_text":["and 500 partners"]`) {
			t.Errorf("certificate-info of a consent hidden whole: %d %s", info.Code, info.Body)
		}
		empty := startSession(t, h)
		call(h, "POST", "/capture/sessions/"+empty.SessionID+"/events", formOrigin, empty.UploadToken, `{"seq":0,"events":`+rrwebChunk+`}`)
		rec := call(h, "POST", "/capture/sessions/"+empty.SessionID+"/consent", formOrigin, empty.UploadToken,
			`{"consents":[{"text":" ","types":["tcpa"]}],"url":"`+formPage+`"}`)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "consents[0].text") {
			t.Errorf("empty text with nothing hidden: %d %s; want 400 naming consents[0].text", rec.Code, rec.Body)
		}

		// A body of a snippet cached before: one visibility, no opt-in method.
		old := give(`{"consents":[{"text":"I agree to be called by Acme.","types":["tcpa"]}],"email":"bob@example.com","url":"` + formPage + `",` +
			`"visibility":{"in_viewport":true,"visible":true,"font_size_px":16,"text_color":"rgb(0, 0, 0)","background_color":"rgb(255, 255, 255)","contrast_ratio":21}}`)
		info = serve(h, request{path: "/verify/certificate-info", token: acmeToken,
			body: `{"certificate_id":"` + old.CertificateID + `","company_id":"acme","property_id":"acme-form"}`})
		body := info.Body.String()
		if info.Code != 200 || !strings.Contains(body, `"consent_visibility":{"in_viewport":true,"visible":true`) ||
			strings.Contains(body, `"revoked_before"`) || strings.Contains(body, `"opt_in_method"`) {
			t.Errorf("certificate-info of an old body: %d %s", info.Code, body)
		}
	})
}
