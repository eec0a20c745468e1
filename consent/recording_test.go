package consent_test

import (
	"crypto/sha256"
	"testing"

	"github.com/consentkit/consentkit/consent"
)

// A recording hashed chunk by chunk has the digest of the recording that
// JoinChunks writes, whatever the chunks' white space and emptiness, and
// hashing goes on after a Sum.
func FuzzRecordingHash(f *testing.F) {
	f.Add([]byte(`[{"type":4}]`), []byte(` [ ] `), []byte("[\n{\"type\":3},{\"type\":2}\n]"))
	f.Add([]byte(`[]`), []byte(`[]`), []byte(`[1]`))
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		chunks := [][]byte{a, b, c}
		h := consent.NewRecordingHash()
		for i, chunk := range chunks {
			h.Add(chunk)
			if got, want := h.Sum(), consent.Digest(sha256.Sum256(consent.JoinChunks(chunks[:i+1]))); got != want {
				t.Fatalf("after %d chunks %q: %s, want %s", i+1, chunks[:i+1], got, want)
			}
		}
	})
}
