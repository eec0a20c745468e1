package main

import (
	"encoding/json"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/capture"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/internal/testwait"
)

// page sends a request, following redirects, and returns the status, the
// final URL and the body.
func page(t *testing.T, send func() (*http.Response, error)) (int, *url.URL, string) {
	t.Helper()
	resp, err := send()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Request.URL, string(b)
}

func getPage(t *testing.T, u string) (int, *url.URL, string) {
	t.Helper()
	return page(t, func() (*http.Response, error) { return http.Get(u) })
}

func postForm(t *testing.T, u string, form url.Values) (int, *url.URL, string) {
	t.Helper()
	return page(t, func() (*http.Response, error) { return http.PostForm(u, form) })
}

// commandLines returns the shell commands a demo page shows, unescaped.
func commandLines(page string) []string {
	var out []string
	for _, line := range strings.Split(html.UnescapeString(page), "\n") {
		if strings.HasPrefix(line, "curl ") {
			out = append(out, line)
		}
	}
	return out
}

// recordConsent records events on the demo form through the capture API,
// as the snippet does: in chunks under the 1 MiB limit, then the consent,
// with email when it is not "". It returns the session and certificate ids.
func recordConsent(t *testing.T, s *running, events []string, email string) (string, string) {
	t.Helper()
	post := func(path, bearer, body string) (int, map[string]any) { return s.capturePost(t, path, bearer, body) }
	code, started := post("/capture/sessions", "", `{"property_id":"acme-demo","url":"`+s.base+`/demo"}`)
	if code != 201 {
		t.Fatalf("start from the server's own origin: %d %v", code, started)
	}
	id, _ := started["session_id"].(string)
	upload, _ := started["upload_token"].(string)
	cert, _ := started["certificate_id"].(string)
	const perChunk = 8000
	for seq := 0; seq*perChunk < len(events); seq++ {
		chunk := events[seq*perChunk : min(len(events), (seq+1)*perChunk)]
		body := `{"seq":` + strconv.Itoa(seq) + `,"events":[` + strings.Join(chunk, ",") + `]}`
		if code, v := post("/capture/sessions/"+id+"/events", upload, body); code != 200 {
			t.Fatalf("events chunk %d: %d %v", seq, code, v)
		}
	}
	consent := map[string]any{"consents": []map[string]any{{"text": "I agree", "types": []string{"tcpa"}}}, "url": s.base + "/demo"}
	if email != "" {
		consent["email"] = email
	}
	body, _ := json.Marshal(consent)
	if code, v := post("/capture/sessions/"+id+"/consent", upload, string(body)); code != 201 {
		t.Fatalf("consent: %d %v", code, v)
	}
	return id, cert
}

// The demo form is served with the snippet tag, and its property allows
// the server's own origin. The page the form lands on is reached by a
// redirect to a GET that can be reloaded; it shows only the demo
// property's certificates, and every word of its commands is quoted, so
// that values from the form run nothing when a command is pasted into a
// shell.
func TestServerDemoForm(t *testing.T) {
	s := start(t, "-store", "memory", "-replayer", replayer)
	if !s.waitFor(t, "/demo in a browser") {
		t.Fatalf("the guide does not point at the demo form:\n%s", s.output())
	}
	code, at, form := getPage(t, s.base+"/")
	tag := `<script src="` + s.base + `/capture/capture.js" data-property-id="acme-demo" async></script>`
	if code != 200 || at.Path != "/demo" || !strings.Contains(form, tag) || !strings.Contains(form, "data-consent ") {
		t.Fatalf("GET / (the address the guide prints): %d at %s\n%s", code, at, form)
	}
	id, cert := recordConsent(t, s, []string{`{"type":4,"data":{},"timestamp":1795301391553}`}, "jane@example.com")

	const email = `jane'$(touch pwned)'"; touch pwned2 #@example.com`
	code, landed, page := postForm(t, s.base+"/demo/submitted", url.Values{"consent_certificate_id": {cert}, "email": {email}})
	if code != 200 || landed.Path != "/demo/submitted" || landed.Query().Get("certificate_id") != cert {
		t.Fatalf("the form landed on %d %s, want 200 on GET /demo/submitted?certificate_id=%s", code, landed, cert)
	}
	code, _, again := getPage(t, landed.String())
	if code != 200 || !strings.Contains(again, id) {
		t.Errorf("reloading the page: %d, session %s shown: %v", code, id, strings.Contains(again, id))
	}
	lines := commandLines(page)
	if len(lines) < 6 {
		t.Fatalf("%d commands on the page, want 6:\n%s", len(lines), page)
	}
	// Run each command with curl replaced by a function that prints its
	// arguments, one per line: nothing else may run, and the email and ids
	// must arrive as they were.
	dir := t.TempDir()
	var args strings.Builder
	for _, line := range lines {
		cmd := exec.Command("sh", "-c", `curl() { for a; do printf '%s\n' "$a"; done; }; TOKEN=tok; `+line)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", line, err, out)
		}
		args.Write(out)
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("pasting the page's commands ran a command from the form's email (%s was created)", f)
		}
	}
	for _, want := range []string{
		`{"company_id":"acme","email":"jane'$(touch pwned)'\"; touch pwned2 #@example.com"}`,
		s.base + "/api/integrations/acme/retain/" + id,
		`"certificate_id":"` + cert + `"`,
		"Authorization: Bearer tok",
	} {
		if !strings.Contains(args.String(), want) {
			t.Errorf("the commands' arguments lack %s:\n%s", want, args.String())
		}
	}

	// Not the demo property's certificate (cert-1 is acme-web's, in
	// session s1), unknown, or not an id: no session and no command.
	for _, c := range []struct{ query, want string }{
		{"certificate_id=cert-1", `id="not-issued"`},
		{"certificate_id=cert-nope", `id="not-issued"`},
		{"certificate_id=" + url.QueryEscape("../x y"), `id="no-id"`},
		{"", `id="no-id"`},
	} {
		code, _, page := getPage(t, s.base+"/demo/submitted?"+c.query)
		if code != 200 || !strings.Contains(page, c.want) || strings.Contains(page, "curl") || strings.Contains(page, "s1") {
			t.Errorf("?%s: %d, want %s and no command:\n%s", c.query, code, c.want, page)
		}
	}
	s.stop(t)
}

// Two servers on one store, each on its own port: the second adds its
// origin to the demo property and leaves the first one's form working; and
// neither start writes a refused entry into the audit log.
func TestServerDemoTwoInstances(t *testing.T) {
	const secret = "an-operator-secret-of-the-tests-0123456789"
	t.Setenv(OperatorSecretEnv, secret)
	db := filepath.Join(t.TempDir(), "consent.db")
	a := start(t, "-store", "sqlite", "-dsn", db, "-replayer", replayer)
	b := start(t, "-store", "sqlite", "-dsn", db, "-replayer", replayer)
	for _, s := range []*running{a, b} {
		code, v := s.capturePost(t, "/capture/sessions", "", `{"property_id":"acme-demo","url":"`+s.base+`/demo"}`)
		if code != 201 {
			t.Errorf("capture from %s's own demo form: %d %v", s.base, code, v)
		}
	}
	req, _ := http.NewRequest("GET", a.base+"/operator/companies/acme/audit?limit=100", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	code, _, body := page(t, func() (*http.Response, error) { return http.DefaultClient.Do(req) })
	if code != 200 || !strings.Contains(body, `"outcome"`) {
		t.Fatalf("audit log: %d %s", code, body)
	}
	for _, m := range regexp.MustCompile(`"outcome":"([^"]*)"`).FindAllStringSubmatch(body, -1) {
		if m[1] != "ok" {
			t.Errorf("the servers' start-up wrote an entry with outcome %q:\n%s", m[1], body)
		}
	}
	b.stop(t)
	a.stop(t)
}

// Without the recorder, and with the install turned off, the log and the
// demo form say exactly what to run, the line that installs the video
// tools included; the page the form lands on says no certificate was
// issued and why, with no command to run on it. The advice is one that
// works from where the server looks: npm ci from the checkout's root when
// it looks in that checkout's install; otherwise the directory it looks
// in, absolute, what chose it, and the setting that points elsewhere.
func TestServerDemoWithoutRecorder(t *testing.T) {
	t.Setenv(capture.RRWebDirEnv, "") // the default, unless a case sets it
	elsewhere, replayer, checkout := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(checkout, replayerPrefix), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, replayerPrefix, "package-lock.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	const fromRoot = "From the root of your checkout of consentkit"
	for _, c := range []struct {
		name, dir string
		args      []string
		want      []string // besides what every case says
		wantNot   []string
	}{
		{"-replayer", "../..", []string{"-replayer", replayer},
			[]string{replayer, "set by <code>-replayer</code>", "point <code>-replayer</code> at", capture.DefaultRRWebDir},
			[]string{fromRoot}},
		{"another directory", elsewhere, nil,
			[]string{filepath.Join(elsewhere, capture.DefaultRRWebDir), "not the root of a checkout", "point <code>-replayer</code> at"},
			[]string{fromRoot}},
		{"a checkout", checkout, nil, []string{fromRoot + ", <code>" + checkout + "</code>"}, []string{"point <code>-replayer</code>"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startIn(t, c.dir, append([]string{"-store", "memory", "-install-recorder=false"}, c.args...)...)
			if !s.waitFor(t, "the session recorder is not installed") {
				t.Fatalf("the log does not say the recorder is missing:\n%s", s.output())
			}
			looked := filepath.Join(replayer, capture.RecorderFile)
			switch c.name {
			case "another directory":
				looked = filepath.Join(elsewhere, capture.DefaultRRWebDir, capture.RecorderFile)
			case "a checkout":
				looked = filepath.Join(checkout, capture.DefaultRRWebDir, capture.RecorderFile)
			}
			for _, want := range []string{"npm ci --prefix retain/mp4/replayer", videoToolsInstall, looked} {
				if !strings.Contains(s.output(), want) {
					t.Errorf("the log does not say %q:\n%s", want, s.output())
				}
			}
			_, _, form := getPage(t, s.base+"/demo")
			_, _, landed := postForm(t, s.base+"/demo/submitted", url.Values{"consent_certificate_id": {"cert-x"}})
			for name, page := range map[string]string{"form": form, "landing page": landed} {
				page = html.UnescapeString(strings.Join(strings.Fields(page), " "))
				for _, want := range append([]string{`id="recorder"`, "npm ci --prefix retain/mp4/replayer", videoToolsInstall}, c.want...) {
					if !strings.Contains(page, want) {
						t.Errorf("the %s lacks %q:\n%s", name, want, page)
					}
				}
				for _, not := range c.wantNot {
					if strings.Contains(page, not) {
						t.Errorf("the %s says %q, advice that would not serve the recorder:\n%s", name, not, page)
					}
				}
			}
			if strings.Contains(landed, "curl") || strings.Contains(landed, "on its way") {
				t.Errorf("the landing page shows a command, or promises the certificate on reload:\n%s", landed)
			}
			s.stop(t)
		})
	}
}

// Run from a checkout whose recorder is not installed, with npm at hand,
// the one command installs it, saying so, and serves it without a restart.
func TestServerInstallsRecorder(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI must have npm")
		}
		t.Skip("npm is not installed here")
	}
	checkout := t.TempDir()
	pkg := filepath.Join(checkout, replayerPrefix)
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("../..", replayerPrefix, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startIn(t, checkout, "-store", "memory")
	if !s.waitFor(t, "installing rrweb's recorder") {
		t.Fatalf("no line of progress:\n%s", s.output())
	}
	testwait.Until(t, 100*time.Millisecond, func() bool {
		return strings.Contains(s.output(), "the session recorder is installed") || strings.Contains(s.output(), "could not install")
	})
	if !strings.Contains(s.output(), "the session recorder is installed") {
		t.Fatalf("the recorder was not installed:\n%s", s.output())
	}
	code, _, js := getPage(t, s.base+"/capture/rrweb.js")
	if code != 200 || !strings.Contains(js, "rrweb") {
		t.Errorf("GET /capture/rrweb.js after the install: %d %.80s", code, js)
	}
	_, _, form := getPage(t, s.base+"/demo")
	if strings.Contains(form, `id="recorder"`) {
		t.Errorf("the demo form still says the recorder is missing:\n%s", form)
	}
	s.stop(t)
}

// Servers starting at once on one store each add their origin to the demo
// property, whether they find it or create it: none drops another's.
func TestSetupDemoKeepsEveryOrigin(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		ctx := t.Context()
		svc, err := consentkit.NewService(open(t), consentkit.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: demoCompany, Name: "Acme"}); err != nil {
			t.Fatal(err)
		}
		const servers = 12
		want := make([]string, 0, servers)
		var wg sync.WaitGroup
		errs := make(chan error, servers)
		for i := range servers {
			addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8000 + i}
			want = append(want, "http://"+addr.String())
			wg.Go(func() {
				on, err := setupDemo(ctx, svc, addr)
				if err == nil && !on {
					err = errors.New("the demo is off")
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("setupDemo: %v", err)
			}
		}
		var got []string
		err = svc.Store().View(ctx, func(tx consent.Tx) error {
			p, err := tx.Property(ctx, demoProperty)
			if err == nil {
				got = p.AllowedOrigins
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("the demo property allows %q, want every server's: %q", got, want)
		}
	})
}
