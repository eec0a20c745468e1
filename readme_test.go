package consentkit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readmeImports are what the README's Go snippets may use.
var readmeImports = map[string]string{
	"context":     "context.Background",
	"fmt":         "fmt.Println",
	"net/http":    "http.NewServeMux",
	"consentkit":  "consentkit.NewService",
	"consent":     "consent.NewID",
	"httpadapter": "httpadapter.New",
	"retain":      "retain.NewWorker",
	"mp4":         "mp4.New",
	"pgstore":     "pgstore.Open",
	"sqlitestore": "sqlitestore.Open",
	"memstore":    "memstore.New",
	"wallet":      "wallet.ParseAmount",
	"os":          "os.Getenv",
	"s3video":     "s3video.New",
	"jobs":        "jobs.New",
	"time":        "time.Hour",
	"webhook":     "webhook.Verify",
	"io":          "io.ReadAll",
	"store":       "store.DefaultMaxBatch",
	"dashboard":   "dashboard.New",
	"signed":      "signed.NewSigningKey",
	"audit":       "audit.VerifyChain",
}

var readmePaths = map[string]string{
	"consent": "consent", "httpadapter": "httpadapter", "retain": "retain", "mp4": "retain/mp4",
	"pgstore": "store/pgstore", "sqlitestore": "store/sqlitestore", "memstore": "store/memstore", "wallet": "wallet",
	"s3video": "retain/s3video", "webhook": "webhook", "jobs": "jobs", "store": "store", "dashboard": "dashboard",
	"signed": "signed", "audit": "audit",
}

// Every Go snippet of the README and of the pages in docs/ compiles against
// the library as it is: each becomes the body of a function returning
// error, inside which ctx and svc (a *consentkit.Service) are in scope, as
// the prose says they are. The README keeps one: the mount.
func TestREADMECompiles(t *testing.T) {
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][][]byte
	for _, page := range append([]string{"README.md"}, pages...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		found := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(text, -1)
		if page == "README.md" && len(found) == 0 {
			t.Fatal("the README shows no Go snippet; it should show how to mount the handler")
		}
		blocks = append(blocks, found...)
	}
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for name := range readmeImports {
		path := name
		if name == "consentkit" {
			path = "github.com/consentkit/consentkit"
		} else if p, ok := readmePaths[name]; ok {
			path = "github.com/consentkit/consentkit/" + p
		}
		src.WriteString("\t\"" + path + "\"\n")
	}
	src.WriteString(")\n\nvar (\n")
	for _, use := range readmeImports {
		src.WriteString("\t_ = " + use + "\n")
	}
	src.WriteString(")\n\nfunc main() {}\n")
	importBlock := regexp.MustCompile(`(?s)^import \(.*?\)\n`)
	for i, b := range blocks {
		body := importBlock.ReplaceAllString(string(b[1]), "")
		src.WriteString("func snippet" + strconv.Itoa(i) + "(ctx context.Context) error {\n\tvar svc *consentkit.Service\n\t_ = svc\n\t{\n" + body + "\t}\n\treturn nil\n}\n")
	}
	dir, err := os.MkdirTemp(".", "_readme")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // in the checkout: one left behind would be seen
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "vet", "./"+filepath.Base(dir)).CombinedOutput()
	if err != nil {
		t.Errorf("the Go snippets of the README and docs/ do not compile: %v\n%s\n%s", err, out, src.String())
	}
}
