package consentkit_test

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

const decisionsPage = "docs/decisions.md"

var (
	// decisionHeading is the heading that states a decision: "## D29 — Input".
	decisionHeading = regexp.MustCompile(`^## D(\d+) — \S`)
	// decisionAnchor is the line just above it: `<a id="d29"></a>`.
	decisionAnchor = regexp.MustCompile(`^<a id="d(\d+)"></a>$`)
	// looseDecision is anything else that looks like the start of a
	// decision (a heading or anchor of another shape, or the old bold lead-in),
	// so that a decision written another way is not silently skipped.
	looseDecision = regexp.MustCompile(`(?i)^(#+\s*D\d|<a\s[^>]*\bid="?d\d|\*\*D\d)`)
	// decisionCitation is how code and pages cite a decision: "D29".
	decisionCitation = regexp.MustCompile(`\bD(\d+)\b`)
	// decisionsLink is a link into the decisions page, "decisions.md#d29",
	// with "](" before it when it is a Markdown link, whose path must lead to
	// the page.
	decisionsLink = regexp.MustCompile(`(\]\()?([\w./-]*decisions\.md)#([\p{L}\p{N}_-]*)`)
	// pageLink is a link within the decisions page, "(#d29)".
	pageLink = regexp.MustCompile(`\]\(#([^\s)]*)\)`)
	// heading is any Markdown heading, whose text GitHub makes an anchor.
	heading = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*$`)
	// htmlAnchor is any explicit anchor on the decisions page.
	htmlAnchor = regexp.MustCompile(`<a id="([^"]+)"></a>`)
)

// docs/decisions.md states every decision D1…Dn once, in order, each under a
// heading "## DN — Title" just below its anchor `<a id="dN"></a>`; every
// citation DN in a Go file, the README or a page of docs/ names one of them;
// every decision is cited outside docs/decisions.md; and every link to
// decisions.md#… in the README or docs/ reaches an anchor that exists. A
// reader of the repository alone can look up each citation, and each decision
// leads to the code that applies it.
func TestDecisionsDocumented(t *testing.T) {
	doc, err := os.ReadFile(decisionsPage)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")

	// The decisions, their headings and anchors.
	var numbers []int
	fenced := false
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced {
			continue
		}
		if m := decisionHeading.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			numbers = append(numbers, n)
			want := `<a id="d` + strconv.Itoa(n) + `"></a>`
			if i == 0 || lines[i-1] != want {
				t.Errorf("%s:%d: %q is not just below its anchor %s", decisionsPage, i+1, line, want)
			}
			if strings.HasSuffix(strings.TrimSpace(line), ".") {
				t.Errorf("%s:%d: %q ends with a period", decisionsPage, i+1, line)
			}
			continue
		}
		if m := decisionAnchor.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "## D"+strconv.Itoa(n)+" — ") {
				t.Errorf("%s:%d: anchor d%d is not just above the heading of D%d", decisionsPage, i+1, n, n)
			}
			continue
		}
		if looseDecision.MatchString(line) {
			t.Errorf("%s:%d: %q looks like a decision but is not `<a id=\"dN\"></a>` above `## DN — Title`", decisionsPage, i+1, line)
		}
	}
	if len(numbers) == 0 {
		t.Fatalf("%s states no decision under a heading `## DN — Title`", decisionsPage)
	}
	for i, n := range numbers {
		if n != i+1 {
			t.Fatalf("%s states %v; want D1…D%d once each, in order", decisionsPage, numbers, len(numbers))
		}
	}
	last := len(numbers)

	// The anchors a link may name: the explicit ones, once each, and those
	// GitHub derives from the headings.
	anchors := map[string]bool{}
	for _, m := range htmlAnchor.FindAllStringSubmatch(string(doc), -1) {
		if anchors[m[1]] {
			t.Errorf("%s has the anchor %q twice", decisionsPage, m[1])
		}
		anchors[m[1]] = true
	}
	slugs := map[string]int{}
	fenced = false
	for _, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if m := heading.FindStringSubmatch(line); m != nil && !fenced {
			s := headingSlug(m[1])
			if k := slugs[s]; k > 0 {
				slugs[s] = k + 1
				s += "-" + strconv.Itoa(k)
			} else {
				slugs[s] = 1
			}
			anchors[s] = true
		}
	}
	for _, m := range pageLink.FindAllStringSubmatch(string(doc), -1) {
		if !anchors[m[1]] {
			t.Errorf("%s links to #%s, which it has no anchor for", decisionsPage, m[1])
		}
	}

	// Citations and links in the code, the README and docs/.
	cited := map[int][]string{}
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		p = filepath.ToSlash(p)
		page, _ := path.Match("docs/*.md", p)
		markdown := page || p == "README.md"
		if !markdown && !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decisionCitation.FindAllSubmatch(src, -1) {
			n, _ := strconv.Atoi(string(m[1]))
			if n < 1 || n > last {
				t.Errorf("%s cites D%d, which %s does not state (D1…D%d)", p, n, decisionsPage, last)
				continue
			}
			if p != decisionsPage {
				cited[n] = append(cited[n], p)
			}
		}
		if !markdown {
			return nil
		}
		for _, m := range decisionsLink.FindAllSubmatch(src, -1) {
			target, fragment := string(m[2]), string(m[3])
			if len(m[1]) > 0 && !strings.Contains(target, "//") {
				if to := path.Join(path.Dir(p), target); to != decisionsPage {
					t.Errorf("%s links to %s#%s, which is not %s", p, target, fragment, decisionsPage)
				}
			}
			if !anchors[fragment] {
				t.Errorf("%s links to %s#%s, which %s has no anchor for", p, target, fragment, decisionsPage)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// The other way: every decision is applied somewhere that says so.
	for n := 1; n <= last; n++ {
		if len(cited[n]) == 0 {
			t.Errorf("D%d is cited by no Go file, README.md or other page of docs/: cite it where it is applied", n)
		}
	}
}

// headingSlug is the anchor GitHub gives a heading: lower case, punctuation
// other than '-' and '_' dropped, spaces made '-'.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
