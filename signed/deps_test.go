package signed_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// An offline check needs nothing of the module but signed: signed imports
// the standard library and the rule of identifiers only, and so does
// cmd/consentkit-verify besides signed (D41).
func TestDepsStayLeaves(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the dependencies:", err)
	}
	allowed := []string{
		"github.com/consentkit/consentkit/signed",
		"github.com/consentkit/consentkit/internal/ident",
		"github.com/consentkit/consentkit/cmd/consentkit-verify",
	}
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}{{end}}`, ".", "../cmd/consentkit-verify").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		if pkg := strings.TrimSpace(line); pkg != "" && !slices.Contains(allowed, pkg) {
			t.Errorf("signed or cmd/consentkit-verify depends on %s: an offline check must need nothing else", pkg)
		}
	}
}
