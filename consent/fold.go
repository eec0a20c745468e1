package consent

import "github.com/consentkit/consentkit/internal/ident"

// Fold maps every rune to the smallest rune of its simple case folding
// orbit, so that two strings are equal under simple folding exactly when
// their folds are equal, rune for rune: how partial match (D11) and an
// audit profile's brand names (D51) ignore case.
func Fold(s string) string { return ident.Fold(s) }
