package e2e_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// runEvidence runs the cases on one evidence stack, each in its subtest.
func runEvidence(t *testing.T, cases []evidenceCase) {
	t.Helper()
	s := newEvidenceStack(t, cases)
	ctx := browser(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, status := s.run(t, ctx, c)
			c.check(t, b, status)
		})
	}
}

// notVisible checks a consent whose text the measure cannot judge or
// whose whole is hidden: not visible, whatever its text.
func notVisible(t *testing.T, b *evidenceBody, _ int) {
	t.Helper()
	c := one(t, b)
	if c.Visibility.Visible {
		t.Errorf("consent %q %+v is visible", c.Text, *c.Visibility)
	}
}

// coverOver is a script that puts an element over the element with id
// "clause", styled by css; style, when set, is a style sheet added too.
func coverOver(css, style string) string {
	return `<style>` + style + `</style><script>
(function () {
  var r = document.getElementById("clause").getBoundingClientRect(), d = document.createElement("div");
  d.className = "cover";
  d.style.cssText = "position:absolute;left:" + (r.left + scrollX - 2) + "px;top:" + (r.top + scrollY - 2) +
    "px;width:" + (r.width + 4) + "px;height:" + (r.height + 4) + "px;" + "` + css + `";
  document.body.appendChild(d);
})();
</script>`
}

// defineElement is a script that defines custom element name, whose
// constructor attaches a shadow root of mode holding inner.
func defineElement(name, mode, inner string) string {
	return `<script>customElements.define("` + name + `", class extends HTMLElement {
  constructor() { super(); this.attachShadow({ mode: "` + mode + `" }).innerHTML = '` + inner + `'; }
});</script>`
}

// slottedClause is a consent whose clause is slotted into custom element
// name, whose shadow root wraps the slot in a span styled by wrapper.
func slottedClause(name, wrapper string) string {
	return `<p><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
		agreeText + ` <` + name + `>` + clauseText + `</` + name + `></span></label></p>` +
		defineElement(name, "open", `<span style="`+wrapper+`"><slot></slot></span>`)
}

// Ways CSS hides text that the measure once missed: clip-path shapes the
// clip boxes do not model, a text fill colour or a filter that changes
// the colour drawn, a fixed box that no scrolling brings into view, text
// squeezed flat, and a dark box beneath dark text that is not its
// ancestor.
func TestMeasureHiddenText(t *testing.T) {
	runEvidence(t, []evidenceCase{
		{name: "clip-path-circle", body: hiddenBy("display:inline-block;clip-path:circle(0)"), check: hiddenClause},
		{name: "clip-path-polygon", body: hiddenBy("display:inline-block;clip-path:polygon(0 0,0 0,0 0)"), check: hiddenClause},
		{name: "text-fill-white", body: hiddenBy("-webkit-text-fill-color:#fff"), check: hiddenClause},
		{name: "filter-brightness", body: hiddenBy("filter:brightness(50)"), check: hiddenClause},
		{name: "filter-invert-parent", body: `<div style="filter:invert(1);background:#fff">` + hiddenBy("color:#eee") + `</div>`,
			check: func(t *testing.T, b *evidenceBody, _ int) {
				// Inverted, #111 text on white is #eee on black, readable;
				// the #eee clause is #111 on black, not.
				hiddenClause(t, b, 0)
			}},
		{name: "fixed-below-viewport", body: hiddenBy("position:fixed;left:10px;top:2000px"),
			after: `<div style="height:4000px"></div>`, check: hiddenClause},
		{name: "squeezed", body: hiddenBy("display:inline-block;transform:scaleX(0.01)"), check: hiddenClause},
		// Colours in a notation other than rgb(), read as a canvas draws
		// them: once taken as absent, the text fill fell back to color
		// and a dark background went unseen.
		{name: "text-fill-oklch-white", body: hiddenBy("-webkit-text-fill-color:oklch(1 0 0)"), check: hiddenClause},
		{name: "background-oklch-black", body: hiddenBy("color:#000;background:oklch(0 0 0)"), check: hiddenClause},
		{name: "cover-oklch-white", body: `<p><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
			agreeText + ` <span id="clause">` + clauseText + `</span></span></label></p>` + coverOver("background:oklch(1 0 0)", ""), check: hiddenClause},
		// SVG text is drawn in its fill, not its color.
		{name: "svg-fill-white", body: `<p><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
			agreeText + ` <svg width="600" height="24" style="vertical-align:middle"><text x="0" y="18" fill="#fff">` + clauseText + `</text></svg></span></label></p>`, check: hiddenClause},
		{name: "svg-fill-opacity-0", body: `<p><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
			agreeText + ` <svg width="600" height="24" style="vertical-align:middle"><text x="0" y="18" fill="#000" fill-opacity="0">` + clauseText + `</text></svg></span></label></p>`, check: hiddenClause},
		// Paint containment clips as overflow: clip does, its overflow
		// still computed visible.
		{name: "contain-paint", body: hiddenBy("display:inline-block;width:0;height:0;white-space:nowrap;contain:paint"), check: hiddenClause},
		// Text directly inside an element whose contents are not rendered:
		// checkVisibility() judges elements, not text.
		{name: "content-visibility-hidden", body: `<p><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
			agreeText + ` <span style="display:inline-block;content-visibility:hidden">` + clauseText + `</span></span></label></p>`, check: hiddenClause},
		{name: "closed-details-bare-text", body: `<p><input type="checkbox" name="agree" id="agree"></p><details data-consent data-consent-types="tcpa"><summary>` +
			agreeText + `</summary>` + clauseText + `</details>`, check: hiddenClause},
		{name: "dark-box-beneath", body: `<div style="position:relative"><div style="position:absolute;left:0;top:0;right:0;bottom:0;background:#111"></div>` +
			`<p style="position:relative"><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
			agreeText + ` <span style="color:#111">` + clauseText + `</span></span></label></p></div>`,
			check: notVisible},
	})
}

// Text shown in the same ways, readable: the measure must not call it
// hidden.
func TestMeasureVisibleText(t *testing.T) {
	runEvidence(t, []evidenceCase{
		{name: "clip-path-circle-large", body: `<p><span data-consent data-consent-types="tcpa" style="display:inline-block;clip-path:circle(100%)">` +
			agreeText + `</span></p>`, check: optedIn("none")},
		{name: "svg-text-black", body: `<p><span data-consent data-consent-types="tcpa"><svg width="600" height="24"><text x="0" y="18" fill="#000">` +
			agreeText + `</text></svg></span></p>`, check: optedIn("none")},
		{name: "text-oklch-dark", body: `<p><span data-consent data-consent-types="tcpa" style="color:oklch(0.25 0.05 250)">` +
			agreeText + `</span></p>`, check: optedIn("none")},
		{name: "text-fill-currentcolor", body: `<p><span data-consent data-consent-types="tcpa" style="-webkit-text-fill-color:currentcolor">` +
			agreeText + `</span></p>`, check: optedIn("none")},
		{name: "filter-mild", body: `<p><span data-consent data-consent-types="tcpa" style="filter:brightness(1.2) drop-shadow(0 0 1px #ccc)">` +
			agreeText + `</span></p>`, check: optedIn("none")},
		{name: "filter-invert-dark-page", body: `<div style="filter:invert(1);background:#fff"><p><span data-consent data-consent-types="tcpa">` +
			agreeText + `</span></p></div>`, check: optedIn("none")},
		{name: "fixed-in-viewport", body: `<p style="position:fixed;left:10px;bottom:10px;margin:0"><span data-consent data-consent-types="tcpa">` +
			agreeText + `</span></p>`, after: `<div style="height:4000px"></div>`, check: optedIn("none")},
		{name: "fixed-in-transformed", body: `<div style="transform:translateX(0)"><p style="position:fixed;left:10px;top:2000px;margin:0">` +
			`<span data-consent data-consent-types="tcpa">` + agreeText + `</span></p></div>`, after: `<div style="height:4000px"></div>`,
			check: func(t *testing.T, b *evidenceBody, _ int) {
				// Fixed in a transformed box, it scrolls with the page.
				c := one(t, b)
				if c.Text != agreeText || !c.Visibility.Visible {
					t.Errorf("consent %q %+v, want it visible", c.Text, *c.Visibility)
				}
			}},
		{name: "rotated", body: `<p style="height:400px"><span data-consent data-consent-types="tcpa" style="display:inline-block;transform:rotate(90deg);transform-origin:0 0;margin-left:30px">` +
			agreeText + `</span></p>`, check: optedIn("none")},
		{name: "dark-box-light-text", body: `<div style="position:relative"><div style="position:absolute;left:0;top:0;right:0;bottom:0;background:#111"></div>` +
			`<p style="position:relative;color:#fff"><span data-consent data-consent-types="tcpa">` + agreeText + `</span></p></div>`,
			check: optedIn("none")},
		{name: "slotted", body: `<p><span data-consent data-consent-types="tcpa">I agree to be called <acme-em>by Acme.</acme-em></span></p>` +
			defineElement("acme-em", "open", `<em><slot></slot></em>`), check: func(t *testing.T, b *evidenceBody, _ int) {
			c := one(t, b)
			if c.Text != agreeText || !c.Visibility.Visible {
				t.Errorf("consent %q %+v, want %q visible", c.Text, *c.Visibility, agreeText)
			}
		}},
	})
}

// Text slotted into a custom element is rendered inside its shadow tree,
// under the wrappers there; text a custom element renders in its shadow
// root is part of what the consumer reads; a closed shadow root cannot be
// read, so the consent is not visible.
func TestMeasureShadowDOM(t *testing.T) {
	runEvidence(t, []evidenceCase{
		{name: "slot-opacity", body: slottedClause("acme-fade", "opacity:0"), check: hiddenClause},
		{name: "slot-clipped", body: slottedClause("acme-clip", "display:inline-block;width:0;height:0;overflow:hidden"), check: hiddenClause},
		{name: "shadow-text", body: `<p><span data-consent data-consent-types="tcpa">I agree to be called by <acme-name></acme-name>.</span></p>` +
			defineElement("acme-name", "open", `<b>Acme and 500 partners</b>`),
			check: func(t *testing.T, b *evidenceBody, _ int) {
				c := one(t, b)
				if c.Text != "I agree to be called by Acme and 500 partners." || !c.Visibility.Visible {
					t.Errorf("consent %q %+v, want the shadow root's words in the text", c.Text, *c.Visibility)
				}
			}},
		{name: "shadow-text-hidden", body: `<p><span data-consent data-consent-types="tcpa">` + agreeText + ` <acme-small></acme-small></span></p>` +
			defineElement("acme-small", "open", `<span style="font-size:1px">`+clauseText+`</span>`), check: hiddenClause},
		{name: "closed-root", body: `<p><span data-consent data-consent-types="tcpa">I agree to be called by <acme-shut></acme-shut>.</span></p>` +
			defineElement("acme-shut", "closed", `<b>Acme and 500 partners</b>`), check: notVisible},
	})
}

// Covers the hit test finds but whose paint the measure once missed:
// another element's ::after, and an inset box-shadow.
func TestMeasureCovers(t *testing.T) {
	clause := hiddenBy("display:inline-block\" id=\"clause")
	runEvidence(t, []evidenceCase{
		// The clause's own positioned pseudo-element, drawn over its text.
		{name: "own-after", body: `<style>.own{position:relative;display:inline-block}.own::after{content:"";position:absolute;inset:0;background:#fff}</style>` +
			hiddenBy("") + `<script>document.querySelector("[data-consent] span").className = "own";</script>`, check: hiddenClause},
		// One that draws an icon beside the text, or lies beneath it,
		// covers nothing.
		{name: "own-before-icon", body: `<style>.icon{position:relative;padding-left:20px}.icon::before{content:"";position:absolute;left:0;top:0;width:14px;height:14px;background:#fff}` +
			`.under{position:relative;display:inline-block}.under::after{content:"";position:absolute;inset:0;background:#fff;z-index:-1}</style>` +
			`<p><span data-consent data-consent-types="tcpa" class="icon"><span class="under">` + agreeText + `</span></span></p>`, check: optedIn("none")},
		{name: "sibling-after", body: clause, after: coverOver("", `.cover::after { content: ""; position: absolute; left: 0; top: 0; right: 0; bottom: 0; background: #fff }`), check: hiddenClause},
		{name: "inset-shadow", body: clause, after: coverOver("box-shadow:inset 0 0 0 1000px #fff", ""), check: hiddenClause},
		// A thin inset shadow frames the clause: it stays readable.
		{name: "inset-shadow-frame", body: `<p><span data-consent data-consent-types="tcpa" id="clause" style="display:inline-block">` + agreeText + `</span></p>`,
			after: coverOver("box-shadow:inset 0 0 0 1px #fff", ""), check: optedIn("none")},
	})
}

// Control characters in the consent's text (a vertical tab where a word
// processor had a line break), which the service refuses, are spaces in
// the text and hidden fragments the measure returns.
func TestMeasureControlCharacters(t *testing.T) {
	runEvidence(t, []evidenceCase{
		{name: "vertical-tab", body: `<p><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
			"I agree to be called\u000b by Acme.</span></label></p>", act: clickOn("agree"),
			check: func(t *testing.T, b *evidenceBody, status int) {
				c := one(t, b)
				if status != http.StatusCreated || c.Text != agreeText {
					t.Errorf("the service answered %d to the consent %q", status, c.Text)
				}
			}},
		{name: "hidden-vertical-tab", body: `<p><label><input type="checkbox" name="agree" id="agree"> <span data-consent data-consent-types="tcpa">` +
			agreeText + " <span style=\"opacity:0\">and I consent\u000b to autodialed calls\u0007 from 500 partners</span></span></label></p>",
			check: func(t *testing.T, b *evidenceBody, status int) {
				c := one(t, b)
				want := []string{"and I consent to autodialed calls from 500 partners"}
				if status != http.StatusCreated || !slices.Equal(c.Visibility.HiddenText, want) || strings.ContainsAny(c.Text, "\u000b\u0007") {
					t.Errorf("the service answered %d to the consent %q hidden %q, want hidden %q", status, c.Text, c.Visibility.HiddenText, want)
				}
			}},
	})
}
