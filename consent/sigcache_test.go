package consent

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"testing"
)

// The signature cache remembers only good signatures, of the exact key,
// certificate and signature checked, and holds at most its size (D41).
func TestSigCache(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := newSigCache(8)
	msg := &Certificate{ID: "cert-1", CompanyID: "acme"}
	sig := ed25519.Sign(priv, CertificateEncoding(msg))
	for i := range 3 { // the first check fills the cache, the next hit it
		if !c.verify(pub, sig, msg) {
			t.Fatalf("check %d: a good signature refused", i)
		}
	}
	if n := c.len(); n != 1 {
		t.Fatalf("the cache holds %d signatures after one good one checked thrice; want 1", n)
	}
	bad := append([]byte{}, sig...)
	bad[0] ^= 1
	changed := &Certificate{ID: "cert-2", CompanyID: "acme"}
	cut := &Certificate{ID: "cert-", CompanyID: "acme"}
	for name, v := range map[string]bool{
		"another message":   c.verify(pub, sig, changed),
		"another signature": c.verify(pub, bad, msg),
		"another key":       c.verify(otherPub, sig, msg),
		"a cut message":     c.verify(pub, sig, cut),
		// A signature of another size is checked in full.
		"a longer signature": c.verify(pub, append(append([]byte{}, sig...), 0), msg),
	} {
		if v {
			t.Errorf("%s: accepted after the good one was cached", name)
		}
	}
	if n := c.len(); n != 1 {
		t.Errorf("refusals were cached: %d signatures held; want 1", n)
	}

	// Bounded: two generations of size/2; the latest stay.
	var last *Certificate
	for i := range 40 {
		m := &Certificate{ID: fmt.Sprintf("cert-%d", i)}
		if !c.verify(pub, ed25519.Sign(priv, CertificateEncoding(m)), m) {
			t.Fatalf("cert-%d refused", i)
		}
		if n := c.len(); n > 8 {
			t.Fatalf("after %d signatures the cache holds %d; its size is 8", i+2, n)
		}
		last = m
	}
	if d, _ := cacheEntry(nil, pub, ed25519.Sign(priv, CertificateEncoding(last)), last); !c.has(d) {
		t.Error("the latest signature is not held")
	}
	if d, _ := cacheEntry(nil, pub, sig, msg); c.has(d) {
		t.Error("the first signature is still held after 40 others")
	}

	off := newSigCache(-1)
	if !off.verify(pub, sig, msg) || off.verify(pub, sig, changed) || off.len() != 0 {
		t.Error("a cache of size -1 does not check each signature in full, or holds some")
	}
}
