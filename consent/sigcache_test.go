package consent

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"testing"
)

// The signature cache remembers only good signatures, of the exact key,
// message and signature checked, and holds at most its size (D41).
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
	msg := []byte(`{"id":"cert-1"}`)
	sig := ed25519.Sign(priv, msg)
	for i := range 3 { // the first check fills the cache, the next hit it
		if !c.verify(pub, msg, sig) {
			t.Fatalf("check %d: a good signature refused", i)
		}
	}
	if n := c.len(); n != 1 {
		t.Fatalf("the cache holds %d signatures after one good one checked thrice; want 1", n)
	}
	bad := append([]byte{}, sig...)
	bad[0] ^= 1
	changed := append([]byte{}, msg...)
	changed[len(changed)-3] = '2'
	for name, v := range map[string]bool{
		"another message":   c.verify(pub, changed, sig),
		"another signature": c.verify(pub, msg, bad),
		"another key":       c.verify(otherPub, msg, sig),
		"a cut message":     c.verify(pub, msg[:len(msg)-1], sig),
		// The same bytes hashed, the boundary between signature and
		// message moved.
		"a longer signature": c.verify(pub, msg[1:], append(append([]byte{}, sig...), msg[0])),
	} {
		if v {
			t.Errorf("%s: accepted after the good one was cached", name)
		}
	}
	if n := c.len(); n != 1 {
		t.Errorf("refusals were cached: %d signatures held; want 1", n)
	}

	// Bounded: two generations of size/2; the latest stay.
	var last []byte
	for i := range 40 {
		m := fmt.Appendf(nil, "cert-%d", i)
		if !c.verify(pub, m, ed25519.Sign(priv, m)) {
			t.Fatalf("cert-%d refused", i)
		}
		if n := c.len(); n > 8 {
			t.Fatalf("after %d signatures the cache holds %d; its size is 8", i+2, n)
		}
		last = m
	}
	if !c.has(c.digest(pub, last, ed25519.Sign(priv, last))) {
		t.Error("the latest signature is not held")
	}
	if c.has(c.digest(pub, msg, sig)) {
		t.Error("the first signature is still held after 40 others")
	}

	off := newSigCache(-1)
	if !off.verify(pub, msg, sig) || off.verify(pub, changed, sig) || off.len() != 0 {
		t.Error("a cache of size -1 does not check each signature in full, or holds some")
	}
}
