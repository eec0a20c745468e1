package consentkit_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docs/decisions.md states every decision D1…D48 once, in order, and every
// decision that a Go file or the README cites: a reader of the repository
// alone can look up each citation.
func TestDecisionsDocumented(t *testing.T) {
	doc, err := os.ReadFile("docs/decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	var numbers []int
	for _, m := range regexp.MustCompile(`(?m)^\*\*D(\d+) — `).FindAllSubmatch(doc, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		numbers = append(numbers, n)
	}
	for i, n := range numbers {
		if n != i+1 {
			t.Fatalf("docs/decisions.md states %v; want D1…D48 once each, in order", numbers)
		}
	}
	if len(numbers) != 48 {
		t.Fatalf("docs/decisions.md states %d decisions, want 48", len(numbers))
	}

	citation := regexp.MustCompile(`\bD(\d+)\b`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || path == "README.md") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range citation.FindAllSubmatch(src, -1) {
			if n, _ := strconv.Atoi(string(m[1])); n < 1 || n > len(numbers) {
				t.Errorf("%s cites D%d, which docs/decisions.md does not state", path, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
