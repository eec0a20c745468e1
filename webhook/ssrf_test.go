package webhook_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/store/memstore"
	"github.com/consentkit/consentkit/webhook"
)

// TestEndpointURLs: by default an endpoint whose host is a non-public IP
// address is refused when it is added; names are left to the dialer.
func TestEndpointURLs(t *testing.T) {
	svc, err := consentkit.NewService(memstore.New(), consentkit.Config{})
	if err != nil {
		t.Fatal(err)
	}
	open, err := consentkit.NewService(memstore.New(), consentkit.Config{WebhookAllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*consentkit.Service{svc, open} {
		if _, err := s.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
			t.Fatal(err)
		}
	}
	add := func(s *consentkit.Service, u, sec string) error {
		_, err := webhook.Endpoints{Service: s}.Add(ctx, webhook.Params{CompanyID: "acme", URL: u, Secret: sec,
			Events: []string{consent.EventConsentRevoked}})
		return err
	}
	private := []string{
		"http://127.0.0.1/hook", "http://127.9.9.9:8080/", "http://10.1.2.3/", "https://172.16.0.1/", "http://192.168.1.1/",
		"http://169.254.169.254/latest/meta-data/", "http://[::1]:8080/", "http://[fe80::1]/", "http://[fd00::1]/",
		"http://0.0.0.0/", "http://[::]/", "http://224.0.0.1/", "http://100.64.0.1/", "http://[::ffff:127.0.0.1]/",
		"http://0x7f.1/", "http://2130706433/",
	}
	for _, u := range private {
		if err := add(svc, u, secret); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("add %s: %v; want Invalid", u, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1/hook", "http://10.1.2.3/", "http://[::1]:8080/"} {
		if err := add(open, u, secret); err != nil {
			t.Errorf("add %s with private addresses allowed: %v", u, err)
		}
	}
	for _, u := range []string{"https://hooks.example.com/consent", "http://93.184.215.14:8080/x", "https://[2606:4700::1111]/",
		"http://localhost:9/"} { // a name: checked as each delivery connects
		if err := add(svc, u, secret); err != nil {
			t.Errorf("add %s: %v", u, err)
		}
	}
	for _, u := range []string{"ftp://hooks.example.com/", "file:///etc/passwd", "hooks.example.com/x", "https://", "https://u:p@hooks.example.com/",
		"javascript:alert(1)", "https://hooks.example.com/\x00"} {
		if err := add(open, u, secret); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("add %q: %v; want Invalid", u, err)
		}
	}
	for _, sec := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwWdPS0Ci+mjE=", "whsec_", "whsec_c2hvcnQ=",
		"whsec_not base64!", "whsec_" + strings.Repeat("QUFB", 22)} { // 66 bytes
		if err := add(svc, "https://hooks.example.com/", sec); consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("secret %q: %v; want Invalid", sec, err)
		}
	}
	ep, err := webhook.Endpoints{Service: svc}.Add(ctx, webhook.Params{CompanyID: "acme", URL: "https://hooks.example.com/",
		Events: []string{consent.EventVideoFailed, consent.EventConsentRevoked, consent.EventVideoFailed}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := webhook.SecretKey(ep.Secret); err != nil || !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Errorf("generated secret %q: %v", ep.Secret, err)
	}
	if strings.Join(ep.Events, ",") != "consent.revoked,video.failed" {
		t.Errorf("events %q; want sorted and without repeats", ep.Events)
	}
	if err := add(svc, "https://hooks.example.com/", secret); err != nil {
		t.Fatal(err)
	}
	_, err = webhook.Endpoints{Service: svc}.Add(ctx, webhook.Params{CompanyID: "acme", URL: "https://h.example/", Events: []string{"consent.granted"}})
	if consent.ErrorCode(err) != consent.Invalid {
		t.Errorf("unknown event type: %v; want Invalid", err)
	}
}

// TestDialGuard: by default a delivery never connects to a loopback or
// private address, whatever the URL says — an IP address
// stored while private addresses were allowed, or a name that resolves to
// one — and logs why; with AllowPrivate it connects.
func TestDialGuard(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		st := open(t)
		rc := newReceiver(t)
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(rc.URL, "http://"))
		guarded := newEnv(t, st, envOpts{guard: true})
		urls := []string{
			rc.URL,                           // 127.0.0.1
			"http://localhost:" + port + "/", // a name for it
			"http://10.1.2.3:9/",
			"http://[::1]:" + port + "/",
		}
		var eps []*consent.WebhookEndpoint
		for _, u := range urls {
			eps = append(eps, guarded.endpoint(t, u, consent.EventCertificateIssued))
		}
		guarded.issue(t, "cert-1")
		if n := guarded.drain(t); n != len(urls) {
			t.Fatalf("%d jobs ran; want %d", n, len(urls))
		}
		if n := len(rc.requests()); n != 0 {
			t.Fatalf("receiver got %d requests through the guard", n)
		}
		for i, ep := range eps {
			log := guarded.log(t, ep.ID)
			if len(log) != 1 || log[0].Status != 0 || !strings.Contains(log[0].Error, "not public") {
				t.Errorf("%s: log %+v; want one refused attempt", urls[i], log)
			}
		}
	})
}

// TestAllowPrivate: with AllowPrivate, loopback receivers get their
// messages, over IPv4 and IPv6.
func TestAllowPrivate(t *testing.T) {
	rc := newReceiver(t)
	urls := []string{rc.URL}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: rc.Config.Handler}}
		srv.Start()
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	} else {
		t.Logf("no IPv6 loopback here (%v): IPv4 only", err)
	}
	e := newEnv(t, teststore.Memory(t), envOpts{})
	for _, u := range urls {
		e.endpoint(t, u, consent.EventCertificateIssued)
	}
	e.issue(t, "cert-1")
	e.drain(t)
	got := rc.requests()
	if len(got) != len(urls) {
		t.Fatalf("receiver got %d requests; want %d", len(got), len(urls))
	}
	for _, r := range got {
		checkSignature(t, secret, r)
	}
}

// TestSpecialAddressesNeverDialled: an endpoint whose URL is an address
// outside loopback and private ones — stored by an older version, say —
// is never reached, even with AllowPrivate: 0.0.0.0 would connect to the
// receiver on 127.0.0.1, the IPv4-compatible and IPv4-translated forms
// carry 127.0.0.1 too, and link-local holds the cloud metadata service.
// (169.254.169.254 refused by a reachable receiver's port says nothing of
// the network: the log's refusal does.)
func TestSpecialAddressesNeverDialled(t *testing.T) {
	rc := newReceiver(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(rc.URL, "http://"))
	urls := []string{
		"http://0.0.0.0:" + port + "/",
		"http://[::127.0.0.1]:" + port + "/",
		"http://[::ffff:0:127.0.0.1]:" + port + "/",
		"http://240.0.0.1:" + port + "/",
		"http://169.254.169.254:" + port + "/latest/meta-data/",
		"http://[fe80::1]:" + port + "/",
	}
	for _, guard := range []bool{true, false} {
		st := teststore.Memory(t)
		e := newEnv(t, st, envOpts{guard: guard})
		var ids []string
		for i, u := range urls {
			ep := &consent.WebhookEndpoint{ID: fmt.Sprintf("ep-%d", i), CompanyID: "acme", URL: u, Secret: secret,
				Events: []string{consent.EventCertificateIssued}, CreatedAt: e.clock.Now()}
			if err := st.Update(ctx, func(tx consent.Tx) error { return tx.CreateWebhookEndpoint(ctx, ep) }); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ep.ID)
		}
		e.issue(t, "cert-1")
		if n := e.drain(t); n != len(urls) {
			t.Fatalf("guard %v: %d jobs ran; want %d", guard, n, len(urls))
		}
		if n := len(rc.requests()); n != 0 {
			t.Fatalf("guard %v: receiver got %d requests", guard, n)
		}
		for i, id := range ids {
			log := e.log(t, id)
			if len(log) != 1 || log[0].Status != 0 || !strings.Contains(log[0].Error, "public") {
				t.Errorf("guard %v, %s: log %+v; want one refused attempt", guard, urls[i], log)
			}
		}
	}
}
