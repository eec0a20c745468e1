package dashboard_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/dashboard"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/signed"
)

// testPNG returns a small PNG, w×h, of one colour.
func testPNG(t testing.TB, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	must(t, png.Encode(&b, img))
	return b.Bytes()
}

// attest records an attestation of the certificate as the attestation
// job does: asked for (pending), then, unless edit is nil, measured
// (recordAttestation). It returns the statement, nil while pending.
func attest(t testing.TB, svc *consentkit.Service, videos retain.VideoStore, certificateID string, shot []byte, edit func(*signed.Statement)) *signed.Statement {
	t.Helper()
	now := svc.Now()
	must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
		cert, err := tx.Certificate(ctx, certificateID)
		if err != nil {
			return err
		}
		return tx.CreateAttestation(ctx, &consent.Attestation{Evidence: consent.Evidence{CertificateID: cert.ID,
			CompanyID: cert.CompanyID, Status: consent.AttestationPending, CreatedAt: now, UpdatedAt: now}})
	}))
	if edit == nil {
		return nil
	}
	return recordAttestation(t, svc, videos, certificateID, shot, edit)
}

// recordAttestation records the certificate's statement as the
// attestation job does: one that edit fills in, signed by svc (unsigned
// when svc has no key), and the screenshot shot, when not nil, kept in
// videos.
func recordAttestation(t testing.TB, svc *consentkit.Service, videos retain.VideoStore, certificateID string, shot []byte, edit func(*signed.Statement)) *signed.Statement {
	t.Helper()
	var cert *consent.Certificate
	must(t, svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		cert, err = tx.Certificate(ctx, certificateID)
		return err
	}))
	content := consent.Signed(cert)
	st, err := signed.NewStatement(&content, svc.Now())
	must(t, err)
	for _, r := range cert.Records {
		st.Consents = append(st.Consents, signed.StatedConsent{Found: true, NodeID: r.NodeID, Text: r.Text})
	}
	var kept consent.Video
	if shot != nil {
		sum := sha256.Sum256(shot)
		st.ScreenshotSHA256 = hex.EncodeToString(sum[:])
		kept, err = videos.PutScreenshot(ctx, cert.ID, shot)
		must(t, err)
	}
	edit(&st)
	sig, err := svc.SignStatement(&st)
	must(t, err)
	body, err := json.Marshal(&st)
	must(t, err)
	must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
		a, err := tx.Attestation(ctx, cert.ID)
		if err != nil {
			return err
		}
		a.Status, a.Statement, a.Signature, a.KeyID, a.Screenshot, a.UpdatedAt = st.Status, body, sig, st.KeyID, kept.Path, svc.Now()
		return tx.UpdateAttestation(ctx, a)
	}))
	return &st
}

// mismatch makes st a mismatch of two facts, whose texts are markup, and
// a replay that could not reproduce two things.
func mismatch(st *signed.Statement) {
	st.Status = signed.Mismatch
	st.Differences = []signed.Difference{
		{Consent: 0, Field: "visibility.visible", Claimed: "true", Measured: "false"},
		{Consent: 0, Field: "text", Claimed: "I agree <b>bold</b>", Measured: `<script>alert("x")</script>`},
	}
	st.Unreproducible = []string{"canvas", "https://cdn.acme.example/font.woff2?a=1&b=<2>"}
}

// getRaw reads path and returns the response with its body read.
func (b *browser) getRaw(path string) (*http.Response, []byte) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	must(b.t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	must(b.t, err)
	return resp, body
}

// A certificate's page shows its attestation (D49) — the status, each
// difference, what the replay could not reproduce, when it measured, the
// screenshot's SHA-256 and whether the statement's signature holds — on
// every store, with the statement's texts escaped; the screenshot is
// served, as a PNG, only under the certificate's own company.
func TestCertificateAttestation(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		svc, _ := fixture(t, open(t))
		videos := retain.Dir{Root: t.TempDir()}
		shot := testPNG(t, 40, 30, color.RGBA{R: 200, A: 255})
		st := attest(t, svc, videos, "cert-acme", shot, mismatch)
		otherShot := testPNG(t, 20, 10, color.RGBA{B: 200, A: 255})
		attest(t, svc, videos, "cert-other", otherShot, func(st *signed.Statement) { st.Status = signed.Attested })
		h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, Videos: videos})
		must(t, err)
		b := newBrowser(t, h)

		// Not logged in: the screenshot is not served.
		if resp, body := b.getRaw("/dashboard/companies/acme/certificates/cert-acme/screenshot"); bytes.Equal(body, shot) || resp.Header.Get("Content-Type") == "image/png" {
			t.Error("the screenshot is served without a login")
		}
		b.login()

		code, body := b.get("/dashboard/companies/acme/certificates/cert-acme")
		if code != 200 {
			t.Fatalf("certificate page: %d %s", code, body)
		}
		contains(t, "attestation", body,
			`<span class="bad">mismatch</span>`,
			`<span class="ok">valid</span> (key <code>dashboard-test</code>)`,
			`<td class="num"><a href="#consent-0">0</a></td><td class="mono">visibility.visible</td><td class="mono">true</td><td class="mono">false</td>`,
			`<td class="mono">I agree &lt;b&gt;bold&lt;/b&gt;</td><td class="mono">&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</td>`,
			`<span class="mono">canvas</span>; <span class="mono">https://cdn.acme.example/font.woff2?a=1&amp;b=&lt;2&gt;</span>`,
			`<code id="screenshot-sha256">`+st.ScreenshotSHA256+`</code>`,
			`id="attestation-measured">`+svc.Now().UTC().Format("2006-01-02 "),
			`<blockquote class="consent" id="consent-0">`,
			`<img id="screenshot" src="/dashboard/companies/acme/certificates/cert-acme/screenshot"`)
		for _, raw := range []string{"<b>bold", `<script>alert`, "b=<2>"} {
			if strings.Contains(body, raw) {
				t.Errorf("the certificate page holds %q: a statement's text is shown raw", raw)
			}
		}

		resp, got := b.getRaw("/dashboard/companies/acme/certificates/cert-acme/screenshot")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || !bytes.Equal(got, shot) {
			t.Errorf("screenshot: %d %s, %d bytes; want 200 image/png with the PNG kept", resp.StatusCode, resp.Header.Get("Content-Type"), len(got))
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("screenshot Cache-Control %q, want no-store", cc)
		}
		if _, err := png.Decode(bytes.NewReader(got)); err != nil {
			t.Errorf("the screenshot served is no PNG: %v", err)
		}
		// A Range of a thousand one-byte parts gets the file once, not a
		// part each (byterange.ServeContent).
		req, err := http.NewRequest("GET", b.base+"/dashboard/companies/acme/certificates/cert-acme/screenshot", nil)
		must(t, err)
		req.Header.Set("Range", "bytes=0-0"+strings.Repeat(",0-0", 999))
		resp, err = b.c.Do(req)
		must(t, err)
		got, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		must(t, err)
		if len(got) > len(shot)+512 {
			t.Errorf("a Range of 1,000 parts: %d %d bytes for a screenshot of %d", resp.StatusCode, len(got), len(shot))
		}
		// Another company's certificate, or this one under another
		// company, is not found: never the other's PNG.
		for _, path := range []string{"/dashboard/companies/other/certificates/cert-acme/screenshot",
			"/dashboard/companies/acme/certificates/cert-other/screenshot",
			"/dashboard/companies/nobody/certificates/cert-acme/screenshot",
			"/dashboard/companies/acme/certificates/cert-none/screenshot"} {
			resp, got := b.getRaw(path)
			if resp.StatusCode != http.StatusNotFound || bytes.Equal(got, shot) || bytes.Equal(got, otherShot) {
				t.Errorf("%s: %d, want 404 and no PNG", path, resp.StatusCode)
			}
		}
		resp, got = b.getRaw("/dashboard/companies/other/certificates/cert-other/screenshot")
		if resp.StatusCode != 200 || !bytes.Equal(got, otherShot) {
			t.Errorf("other's screenshot under other: %d, want 200 and its PNG", resp.StatusCode)
		}
		_, body = b.get("/dashboard/companies/other/certificates/cert-other")
		contains(t, "an attested certificate", body, `<span class="ok">attested</span>`,
			`<img id="screenshot" src="/dashboard/companies/other/certificates/cert-other/screenshot"`)
		if strings.Contains(body, `id="differences"`) || strings.Contains(body, "cert-acme") {
			t.Error("an attested certificate's page lists differences, or shows another company's certificate")
		}

		// A row edited to name a file that no signed statement states is
		// never served as its evidence.
		must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
			a, err := tx.Attestation(ctx, "cert-other")
			if err != nil {
				return err
			}
			a.Status, a.Statement, a.Signature = consent.AttestationPending, nil, nil
			return tx.UpdateAttestation(ctx, a)
		}))
		if resp, got := b.getRaw("/dashboard/companies/other/certificates/cert-other/screenshot"); resp.StatusCode == 200 || bytes.Equal(got, otherShot) {
			t.Errorf("a pending row that names a screenshot: %d, want it refused", resp.StatusCode)
		}
		// Without a video store, no screenshot is shown or served.
		h2, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret})
		must(t, err)
		b2 := newBrowser(t, h2)
		b2.login()
		_, body = b2.get("/dashboard/companies/acme/certificates/cert-acme")
		contains(t, "attestation without videos", body, `<span class="bad">mismatch</span>`, st.ScreenshotSHA256)
		if strings.Contains(body, `<img id="screenshot"`) {
			t.Error("the page shows a screenshot without Config.Videos")
		}
		if resp, _ := b2.getRaw("/dashboard/companies/acme/certificates/cert-acme/screenshot"); resp.StatusCode != http.StatusNotFound {
			t.Errorf("screenshot without Config.Videos: %d, want 404", resp.StatusCode)
		}
	})
}

// A pending attestation shows as pending, with no statement and no
// image; an unavailable one says why; a certificate without one says so;
// a statement changed after it was signed is shown as not holding.
func TestCertificateAttestationStates(t *testing.T) {
	svc, _ := fixture(t, teststore.Memory(t))
	videos := retain.Dir{Root: t.TempDir()}
	h, err := dashboard.New(svc, dashboard.Config{OperatorSecret: secret, Videos: videos})
	must(t, err)
	b := newBrowser(t, h)
	b.login()
	page := "/dashboard/companies/acme/certificates/cert-acme"

	_, body := b.get(page)
	contains(t, "no attestation", body, `id="attestation-status">No attestation was asked for.`)

	attest(t, svc, videos, "cert-acme", nil, nil)
	_, body = b.get(page)
	contains(t, "pending", body, `<span class="muted">pending</span>: the replay has not measured yet`)
	for _, absent := range []string{`<img id="screenshot"`, `id="differences"`, `id="attestation-measured"`, `id="attestation-signature"`} {
		if strings.Contains(body, absent) {
			t.Errorf("a pending attestation's page holds %s", absent)
		}
	}
	if resp, _ := b.getRaw(page + "/screenshot"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("screenshot of a pending attestation: %d, want 404", resp.StatusCode)
	}

	// Unavailable, with its reason; its statement is unsigned when the
	// service has no key, and shown so by a service without keys.
	keyless, err := consentkit.NewService(svc.Store(), consentkit.Config{})
	must(t, err)
	recordAttestation(t, keyless, videos, "cert-acme", nil, func(st *signed.Statement) {
		st.Status, st.Reason = signed.Unavailable, "the recording <is> not kept any more"
	})
	hk, err := dashboard.New(keyless, dashboard.Config{OperatorSecret: secret, Videos: videos})
	must(t, err)
	bk := newBrowser(t, hk)
	bk.login()
	_, body = bk.get(page)
	contains(t, "unavailable", body, `<span class="bad">unavailable</span>: the replay could not measure (<span id="attestation-reason">the recording &lt;is&gt; not kept any more</span>)`,
		`id="attestation-signature"><span class="muted">not signed</span>`, `<span class="muted">no screenshot</span>`,
		`<span class="muted">nothing: the replay reproduced the page</span>`)
	if strings.Contains(body, `<img id="screenshot"`) {
		t.Error("an attestation without a screenshot shows one")
	}
	// A service with keys takes an unsigned statement as a certificate
	// without a signature: not verified.
	_, body = b.get(page)
	contains(t, "unsigned, with keys", body, `id="attestation-status"><span class="bad">not verified</span>`,
		`id="attestation-signature"><span class="bad">the statement is not signed`)

	// A signed statement changed in the store no longer holds; nor does
	// a row whose status differs from its statement's, or one that says
	// attested with no statement: each is shown not verified, never
	// attested.
	recordAttestation(t, svc, videos, "cert-acme", testPNG(t, 4, 4, color.Black), mismatch)
	_, body = b.get(page)
	contains(t, "signed mismatch", body, `id="attestation-signature"><span class="ok">valid</span>`)
	const profiles = "/dashboard/companies/acme/profiles"
	b.get(profiles)
	if code, body := b.post(profiles, url.Values{"name": {"attested"}, "rules": {`{"attestation":{}}`}}); code != http.StatusOK {
		t.Fatalf("add the profile: %d %s", code, body)
	}
	for _, c := range []struct {
		name, want string
		edit       func(a *consent.Attestation)
	}{
		{"statement changed", "signed: the statement&#39;s signature does not match it", func(a *consent.Attestation) {
			a.Statement = bytes.Replace(a.Statement, []byte(`"measured":"false"`), []byte(`"measured":"true"`), 1)
		}},
		{"status changed", `the signed statement says &#34;mismatch&#34;, not &#34;attested&#34;`, func(a *consent.Attestation) {
			a.Status = consent.AttestationAttested
		}},
		{"statement unreadable", "the stored statement cannot be read", func(a *consent.Attestation) {
			a.Statement = []byte("{")
		}},
		{"no statement", `the status is &#34;attested&#34;, and no signed statement says so`, func(a *consent.Attestation) {
			a.Status, a.Statement, a.Signature, a.KeyID = consent.AttestationAttested, nil, nil, ""
		}},
	} {
		must(t, svc.Store().Update(ctx, func(tx consent.Tx) error {
			a, err := tx.Attestation(ctx, "cert-acme")
			if err != nil {
				return err
			}
			c.edit(a)
			return tx.UpdateAttestation(ctx, a)
		}))
		_, body = b.get(page)
		contains(t, c.name, body, `id="attestation-signature"><span class="bad">`+c.want, `id="attestation-status"><span class="bad">not verified</span>`)
		if strings.Contains(body, `<span class="ok">attested</span>`) {
			t.Errorf("%s: the page says attested", c.name)
		}
		_, body = b.get(page + "?profile=attested")
		contains(t, c.name+", graded", body, `id="grade-refused">409 certificate integrity check failed`) // as every verification answers
		recordAttestation(t, svc, videos, "cert-acme", testPNG(t, 4, 4, color.Black), mismatch)           // the next case starts from a sound row
	}
}
