package mp4

import (
	"strings"
	"testing"
)

func TestBuildPage(t *testing.T) {
	page := buildPage(`window.rrweb = {}; var s = "</script><img src=x>";`, `.a{color:red}</style><b>`)
	for _, want := range []string{
		`performance.now = () => now`, // the virtual clock…
		`window.rrweb = {}`,           // …comes before rrweb
		`.a{color:red}`,
		`<div id="stage"></div>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Index(page, "performance.now") > strings.Index(page, "window.rrweb") {
		t.Error("the clock must be replaced before rrweb loads")
	}
	// Neither the bundle nor the stylesheet can close their element early.
	if strings.Count(page, "</script>") != 2 || strings.Count(page, "</style>") != 1 {
		t.Errorf("an element was closed early:\n%s", page)
	}
	if !strings.Contains(page, `<\/script><img src=x>`) || !strings.Contains(page, `<\/style><b>`) {
		t.Error("closing tags inside the bundle were not escaped")
	}
}
