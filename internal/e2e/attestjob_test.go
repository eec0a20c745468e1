package e2e_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/signed"
)

// api calls the stack's service as a client of the company would, with
// its token, and decodes the JSON answer.
func (s *attestStack) api(t *testing.T, method, path, body string, header ...string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.base.token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	s.base.api.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// attestInfo is what an attestation test reads of certificate-info.
type attestInfo struct {
	Signed      signed.Content `json:"signed"`
	Attestation *struct {
		Status           string              `json:"status"`
		Reason           string              `json:"reason"`
		ScreenshotSHA256 string              `json:"screenshot_sha256"`
		Differences      []signed.Difference `json:"differences"`
		signed.StatementProof
	} `json:"attestation"`
}

// attest asks for the certificate's attestation through /verify/match
// ("attest": true, answered pending), runs the job in a real worker, and
// returns what certificate-info then answers, having checked that the
// statement verifies offline with the published keys and fails once
// edited.
func (s *attestStack) attest(t *testing.T, w *retain.Worker, certID string) attestInfo {
	t.Helper()
	code, body := s.api(t, "POST", "/verify/match", `{"certificate_id":"`+certID+`","company_id":"acme","consent":"x","attest":true}`)
	if code != 200 || !bytes.Contains(body, []byte(`"attestation":{"status":"pending"}`)) {
		t.Fatalf("match asking for the attestation: %d %s", code, body)
	}
	if ok, err := w.AttestOnce(context.Background()); err != nil || !ok {
		t.Fatalf("AttestOnce: %v %v", ok, err)
	}
	code, body = s.api(t, "POST", "/verify/certificate-info", `{"certificate_id":"`+certID+`","company_id":"acme","property_id":"evidence-form"}`)
	var info attestInfo
	if err := json.Unmarshal(body, &info); code != 200 || err != nil || info.Attestation == nil {
		t.Fatalf("certificate-info: %d %s %v", code, body, err)
	}
	code, body = s.api(t, "GET", "/.well-known/consentkit-keys", "")
	var keys signed.KeySet
	if err := json.Unmarshal(body, &keys); code != 200 || err != nil {
		t.Fatalf("keys: %d %s %v", code, body, err)
	}
	proof := info.Attestation.StatementProof
	if err := proof.Verify(&keys, &info.Signed); err != nil {
		t.Fatalf("the statement does not verify offline: %v", err)
	}
	edited := *proof.Statement
	edited.Status = signed.Attested
	if edited.Status == proof.Statement.Status {
		edited.Status = signed.Mismatch
	}
	proof.Statement = &edited
	if err := proof.Verify(&keys, &info.Signed); err == nil {
		t.Error("a statement with its status edited verifies")
	}
	t.Logf("%s: %s %q %+v", certID, info.Attestation.Status, info.Attestation.Reason, info.Attestation.Differences)
	return info
}

// The whole attestation, as a buyer meets it: forms recorded through the
// real snippet in headless Chromium, attested by the service's own job in
// the converter's browser. An honest page is attested, and its screenshot,
// of the recording's viewport, served to the company with the SHA-256 the
// statement signs; a page whose consent a stylesheet of another origin
// styles (the replay cannot load it) is unavailable, never a mismatch;
// consent bodies forged by a plain HTTP client — a recording without the
// claimed element, or with it hidden — are a mismatch (D49).
func TestAttestationJob(t *testing.T) {
	css := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		_, _ = io.WriteString(w, "span[data-consent] { font-size: 11px; color: #999 }") // a browser gone: the test fails waiting for it
	}))
	t.Cleanup(css.Close)
	pages := []attestPage{
		// The consent in a red that nothing else on the page is drawn in,
		// so that the screenshot shows whether its text was drawn.
		{name: "honest", body: `<div style="color:#b00000">` + withBox("") + `</div>`, act: clickOn("agree")},
		{name: "styled", body: `<link rel="stylesheet" href="` + css.URL + `/site.css">` + withBox(""), act: clickOn("agree")},
	}
	s := newAttestStack(t, pages)
	ctx := browser(t)
	w, err := retain.NewWorker(retain.WorkerConfig{Service: s.base.svc, Converter: attestor(t), Videos: s.base.videos,
		TempDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("honest", func(t *testing.T) {
		got := s.run(t, ctx, pages[0])
		info := s.attest(t, w, got.cert.ID)
		if info.Attestation.Status != signed.Attested || len(info.Attestation.Differences) != 0 {
			t.Fatalf("an honest page: %+v", info.Attestation)
		}
		code, shot := s.api(t, "GET", "/api/integrations/acme/certificates/"+got.cert.ID+"/screenshot", "")
		if code != 200 {
			t.Fatalf("the screenshot: %d %s", code, shot)
		}
		if sum := sha256Hex(shot); sum != info.Attestation.ScreenshotSHA256 || sum != info.Attestation.Statement.ScreenshotSHA256 {
			t.Errorf("the screenshot's SHA-256 %s, stated %s", sum, info.Attestation.ScreenshotSHA256)
		}
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatalf("the screenshot is not a PNG: %v", err)
		}
		width, height := viewportOf(t, got.recording)
		if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
			t.Errorf("the screenshot is %dx%d, the recording's viewport %dx%d", b.Dx(), b.Dy(), width, height)
		}
		if red := redPixels(img); red < 100 {
			t.Errorf("the screenshot has %d pixels of the consent's red: its text was not drawn", red)
		}
		if dir := os.Getenv("CONSENTKIT_KEEP_SCREENSHOT"); dir != "" { // to look at it
			_ = os.WriteFile(filepath.Join(dir, "attested.png"), shot, 0o644)
		}
	})
	t.Run("unloadable stylesheet", func(t *testing.T) {
		got := s.run(t, ctx, pages[1])
		if v := got.consents[0].Visibility; v.FontSizePx != 11 {
			t.Fatalf("the live page measured %+v; the stylesheet did not apply", v)
		}
		info := s.attest(t, w, got.cert.ID)
		a := info.Attestation
		if a.Status != signed.Unavailable || !strings.Contains(a.Reason, "stylesheet "+css.URL+"/site.css") {
			t.Errorf("a page styled by a stylesheet the replay cannot load: %+v", a)
		}
		// What the replay measured otherwise is listed all the same.
		if !slices.ContainsFunc(a.Differences, func(d signed.Difference) bool { return d.Field == "visibility.font_size_px" && d.Claimed == "11" }) {
			t.Errorf("differences %+v; want the font size claimed 11 px, measured otherwise", a.Differences)
		}
	})

	// Forged: no browser, a spoofed Origin, a recording made up.
	for _, tc := range []struct {
		name, style string
		node        int
	}{
		{"element not recorded", "", 777},
		{"element hidden", "opacity:0", 9},
	} {
		t.Run("forged, "+tc.name, func(t *testing.T) {
			id := s.forge(t, tc.style, tc.node)
			a := s.attest(t, w, id).Attestation
			if a.Status != signed.Mismatch || len(a.Differences) == 0 {
				t.Errorf("a forged consent body: %+v, want a mismatch", a)
			}
		})
	}
}

// A consent body of the old form — one visibility for the whole body,
// none per consent, as snippets cached in browsers before each consent
// had its own still send — forged by a plain HTTP client: it claims the
// consent in the viewport at 16 px with contrast 21, while the recording
// holds it 5000 px down the page, 5 px high, light grey. The replay in
// the converter's browser measures it otherwise: a mismatch, never
// attested (D47, D49).
func TestAttestationJobOldBody(t *testing.T) {
	s := newAttestStack(t, nil)
	w, err := retain.NewWorker(retain.WorkerConfig{Service: s.base.svc, Converter: attestor(t), Videos: s.base.videos,
		TempDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	id := s.forgeBody(t, "position:absolute;top:5000px;font-size:5px;color:#aaa", func(page string) string {
		return `{"consents":[{"text":"` + agreeText + `","types":["tcpa"],"node_id":9,"opt_in_method":"manual"}],` +
			`"visibility":{"in_viewport":true,"visible":true,"font_size_px":16,"text_color":"rgb(0, 0, 0)",` +
			`"background_color":"rgb(255, 255, 255)","contrast_ratio":21,"hidden_text":[]},"url":"` + page + `"}`
	})
	a := s.attest(t, w, id).Attestation
	fields := map[string]bool{}
	for _, d := range a.Differences {
		fields[d.Field] = d.Consent == 0
	}
	if a.Status != signed.Mismatch || !fields["visibility.in_viewport"] || !fields["visibility.font_size_px"] || !fields["visibility.contrast_ratio"] {
		t.Errorf("an old consent body claiming what the recording does not show: %+v, want a mismatch of consent 0's "+
			"in_viewport, font_size_px and contrast_ratio", a)
	}
}

// forge gives consent as a script would: it starts a session with the
// form's origin in a header, sends a recording of one paragraph holding
// the consent text at node 9 (with style), and claims the consent visible
// at node.
func (s *attestStack) forge(t *testing.T, style string, node int) string {
	t.Helper()
	return s.forgeBody(t, style, func(page string) string {
		return `{"consents":[{"text":"` + agreeText + `","types":["tcpa"],"node_id":` + strconv.Itoa(node) + `,"opt_in_method":"manual",` +
			`"visibility":{"in_viewport":true,"visible":true,"font_size_px":16,"text_color":"rgb(0, 0, 0)","background_color":"rgb(255, 255, 255)",` +
			`"contrast_ratio":21,"hidden_text":[]}}],"url":"` + page + `"}`
	})
}

// forgeBody is forge with the consent body that claim writes for the
// page's URL.
func (s *attestStack) forgeBody(t *testing.T, style string, claim func(page string) string) string {
	t.Helper()
	origin := s.pages.URL
	page := origin + "/forged"
	code, body := s.api(t, "POST", "/capture/sessions", `{"property_id":"evidence-form","url":"`+page+`"}`, "Origin", origin)
	var started struct {
		SessionID     string `json:"session_id"`
		CertificateID string `json:"certificate_id"`
		UploadToken   string `json:"upload_token"`
	}
	if err := json.Unmarshal(body, &started); code != 201 || err != nil {
		t.Fatalf("start: %d %s", code, body)
	}
	at := time.Now().UnixMilli()
	attrs := `{}`
	if style != "" {
		attrs = `{"style":"` + style + `"}`
	}
	events := `[{"type":4,"data":{"href":"` + page + `","width":800,"height":600},"timestamp":` + strconv.FormatInt(at, 10) + `},` +
		`{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[` +
		`{"type":2,"tagName":"head","id":3,"attributes":{},"childNodes":[]},` +
		`{"type":2,"tagName":"body","id":5,"attributes":{},"childNodes":[` +
		`{"type":2,"tagName":"p","id":9,"attributes":` + attrs + `,"childNodes":[{"type":3,"id":10,"textContent":"` + agreeText + `"}]}]}]}]},` +
		`"initialOffset":{"top":0,"left":0}},"timestamp":` + strconv.FormatInt(at+10, 10) + `}]`
	path := "/capture/sessions/" + started.SessionID
	auth := []string{"Origin", origin, "Authorization", "Bearer " + started.UploadToken}
	if code, body := s.apiAs(t, "POST", path+"/events", `{"seq":0,"events":`+events+`}`, auth...); code/100 != 2 {
		t.Fatalf("events: %d %s", code, body)
	}
	if code, body := s.apiAs(t, "POST", path+"/consent", claim(page), auth...); code != 201 {
		t.Fatalf("consent: %d %s", code, body)
	}
	return started.CertificateID
}

// apiAs is api with the caller's own headers instead of the company's
// token.
func (s *attestStack) apiAs(t *testing.T, method, path, body string, header ...string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	s.base.api.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// redPixels counts the pixels of img that are clearly red: the honest
// page's consent text, antialiased.
func redPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r > 0x6000 && g < r/2 && bl < r/2 {
				n++
			}
		}
	}
	return n
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
