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
