package sigcache

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/consentkit/consentkit/signed"
)

// The signature cache remembers only good signatures, of the exact key,
// certificate and signature checked, and holds at most its size (D41).
func TestCache(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := New(8)
	msg := &signed.Document{ID: "cert-1", CompanyID: "acme"}
	sig := ed25519.Sign(priv, msg.Encoding())
	for i := range 3 { // the first check fills the cache, the next hit it
		if !c.Verify(pub, sig, msg) {
			t.Fatalf("check %d: a good signature refused", i)
		}
	}
	if n := c.Len(); n != 1 {
		t.Fatalf("the cache holds %d signatures after one good one checked thrice; want 1", n)
	}
	bad := append([]byte{}, sig...)
	bad[0] ^= 1
	changed := &signed.Document{ID: "cert-2", CompanyID: "acme"}
	cut := &signed.Document{ID: "cert-", CompanyID: "acme"}
	for name, v := range map[string]bool{
		"another message":   c.Verify(pub, sig, changed),
		"another signature": c.Verify(pub, bad, msg),
		"another key":       c.Verify(otherPub, sig, msg),
		"a cut message":     c.Verify(pub, sig, cut),
		// A signature of another size is checked in full.
		"a longer signature": c.Verify(pub, append(append([]byte{}, sig...), 0), msg),
	} {
		if v {
			t.Errorf("%s: accepted after the good one was cached", name)
		}
	}
	if n := c.Len(); n != 1 {
		t.Errorf("refusals were cached: %d signatures held; want 1", n)
	}

	// Bounded: two generations of size/2; the latest stay.
	var last *signed.Document
	for i := range 40 {
		m := &signed.Document{ID: fmt.Sprintf("cert-%d", i)}
		if !c.Verify(pub, ed25519.Sign(priv, m.Encoding()), m) {
			t.Fatalf("cert-%d refused", i)
		}
		if n := c.Len(); n > 8 {
			t.Fatalf("after %d signatures the cache holds %d; its size is 8", i+2, n)
		}
		last = m
	}
	if e, _ := entry(nil, pub, ed25519.Sign(priv, last.Encoding()), last); !c.has(e) {
		t.Error("the latest signature is not held")
	}
	if e, _ := entry(nil, pub, sig, msg); c.has(e) {
		t.Error("the first signature is still held after 40 others")
	}

	off := New(-1)
	if !off.Verify(pub, sig, msg) || off.Verify(pub, sig, changed) || off.Len() != 0 {
		t.Error("a cache of size -1 does not check each signature in full, or holds some")
	}
}
