package main

import (
	"strings"
	"testing"
)

// A top-up that never left the machine — no backend named, no secret —
// is a usage error, not a top-up "whose crediting is unknown".
func TestTopUpUsageErrorIsNotUnknown(t *testing.T) {
	for _, env := range []map[string]string{
		{},                                 // neither -url nor -dsn
		{URLEnv: "http://127.0.0.1:1"},     // no operator secret
		{DSNEnv: t.TempDir() + "/none.db"}, // no database there
	} {
		b := &backend{name: "none", env: env, clock: &clock{t: start}, openStore: openStore}
		code, _, errs := b.run(t, "wallet", "topup", "-company", "acme", "-amount", "1", "-key", "k-1")
		if strings.Contains(errs, "whether it was credited is unknown") {
			t.Errorf("env %v: exit %d, %q: nothing was sent, yet the top-up is called unknown", env, code, errs)
		}
	}
}
