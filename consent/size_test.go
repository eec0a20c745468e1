package consent_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// consent is the vocabulary and the storage contract; what grows around
// them gets a package of its own (contact, audit, signed, wallet,
// webhook…). Its code without tests stays within 2,500 lines.
func TestVocabularyStaysSmall(t *testing.T) {
	const limit = 2500
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines > limit {
		t.Errorf("package consent holds %d lines without tests, over %d: give what grew a package of its own", lines, limit)
	}
}
