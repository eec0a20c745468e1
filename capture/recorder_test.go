package capture_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/capture"
)

// umd is a bundle of the shape rrweb's is: a UMD header that registers
// with an AMD loader or CommonJS when the page has one, and sets rrweb on
// this (the window) otherwise; its last line a source map comment.
const umd = `(function (g, f) {
    if ("object" == typeof exports && "object" == typeof module) {
      module.exports = f();
    } else if ("function" == typeof define && define.amd) {
      define("rrweb", [], f);
    } else if ("object" == typeof exports) {
      exports["rrweb"] = f();
    } else {
      g["rrweb"] = f();
    }
  }(this, () => ({ record: function () { return "recording"; } })))
//# sourceMappingURL=rrweb.umd.min.cjs.map`

// The wrapped bundle binds to no name of the page's, whatever the page
// defines, and hands the library to the script element that loaded it.
func TestRecorderScriptBindsNoPageName(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found")
	}
	for name, page := range map[string]string{
		"plain":   ``,
		"amd":     `globalThis.define = function () { throw new Error("define called"); }; define.amd = {};`,
		"exports": `globalThis.exports = {}; globalThis.module = { exports: globalThis.exports };`,
		"rrweb":   `globalThis.rrweb = { mine: true };`,
	} {
		t.Run(name, func(t *testing.T) {
			js := `
class HTMLScriptElement {}
const script = new HTMLScriptElement();
class Document {}
Object.defineProperty(Document.prototype, "currentScript", { get() { return script; } });
globalThis.document = new Document();
` + page + `
const before = JSON.stringify([typeof define, typeof exports, typeof module, globalThis.rrweb]);
` + string(capture.RecorderScript([]byte(umd))) + `
const after = JSON.stringify([typeof define, typeof exports, typeof module, globalThis.rrweb]);
if (before !== after) throw new Error("the page's names changed: " + before + " → " + after);
if (!script.consentkitRecorder || script.consentkitRecorder.record() !== "recording") throw new Error("no recorder on the script element");
if (globalThis.exports && Object.keys(globalThis.exports).length) throw new Error("exports written");
console.log("ok");
`
			out, err := exec.Command(node, "-e", js).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "ok" {
				t.Errorf("%v: %s", err, out)
			}
		})
	}
}

// Script serves the bundle wrapped, and a bundle changed on disk wrapped
// anew.
func TestRecorderScript(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, capture.RecorderFile)
	if err := os.WriteFile(path, []byte("var rrweb={v:1};"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := capture.NewRecorder(dir)
	script, mod, err := r.Script()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(script, capture.RecorderScript([]byte("var rrweb={v:1};"))) {
		t.Errorf("Script: %s", script)
	}
	if again, _, _ := r.Script(); !bytes.Equal(again, script) {
		t.Errorf("Script again: %s", again)
	}
	if body, _, _ := r.Load(); string(body) != "var rrweb={v:1};" {
		t.Errorf("Load: %s, want the bundle as it is", body)
	}
	later := time.Now().Add(time.Hour).Truncate(time.Second)
	if err := os.WriteFile(path, []byte("var rrweb={v:2};"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	script2, mod2, err := r.Script()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(script2, []byte("var rrweb={v:2};")) || !mod2.Equal(later) || !mod2.After(mod) {
		t.Errorf("after an upgrade: %s at %v (before %v)", script2, mod2, mod)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Script(); err == nil {
		t.Error("Script of a removed bundle: no error")
	}
}
