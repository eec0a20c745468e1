package storetest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The suite is the contract of a store, which sits below the Service: a
// store written for another database imports it without the Service (the
// root package), so neither it nor anything it imports may import the
// Service.
func TestDepsLeaveOutTheService(t *testing.T) {
	const service = "github.com/consentkit/consentkit"
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the dependencies:", err)
	}
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), " ")
		for imp := range strings.FieldsSeq(imports) {
			if imp == service {
				t.Errorf("%s imports %s: storetest must not depend on the Service", pkg, service)
			}
		}
	}
}
