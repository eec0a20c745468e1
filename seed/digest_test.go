package seed_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/seed"
)

// readCounter counts the reads of each session's recording
// (Tx.EachEventChunk) and the bytes they return, on every transaction of
// the store it wraps.
type readCounter struct {
	mu    sync.Mutex
	reads map[string]int
	bytes int
}

func (c *readCounter) add(sessionID string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[sessionID]++
	c.bytes += n
}

type countingStore struct {
	consent.Store
	c *readCounter
}

func (s countingStore) Update(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.Update(ctx, func(tx consent.Tx) error { return fn(countingTx{tx, s.c}) })
}

func (s countingStore) View(ctx context.Context, fn func(consent.Tx) error) error {
	return s.Store.View(ctx, func(tx consent.Tx) error { return fn(countingTx{tx, s.c}) })
}

type countingTx struct {
	consent.Tx
	c *readCounter
}

func (t countingTx) EachEventChunk(ctx context.Context, sessionID string, fn func([]byte) error) error {
	n := 0
	err := t.Tx.EachEventChunk(ctx, sessionID, func(chunk []byte) error {
		n += len(chunk)
		return fn(chunk)
	})
	t.c.add(sessionID, n)
	return err
}

// recordedSeed is a file of session "s" with events of about 300 KB, in
// several chunks, session "quiet" without events, and certs certificates
// of each.
func recordedSeed(certs int) string {
	var b strings.Builder
	b.WriteString(`{"companies":[{"id":"a","name":"A","properties":[{"id":"p","name":"P"}]}],` +
		`"sessions":[{"id":"quiet","company_id":"a","property_id":"p"},{"id":"s","company_id":"a","property_id":"p","events":[`)
	ev := `{"type":3,"data":"` + strings.Repeat("x", 1000) + `"}`
	for i := range 300 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ev)
	}
	b.WriteString(`]}],"certificates":[`)
	for i := range certs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"c%d","company_id":"a","property_id":"p","session_id":"s","consents":[{"text":"I agree"}]},`+
			`{"id":"q%d","company_id":"a","property_id":"p","session_id":"quiet","consents":[{"text":"I agree"}]}`, i, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// Load reads and hashes each session's recording once, however many
// certificates the file gives it: were it read per certificate, a small
// file (one large session, many certificates) would cost certificates ×
// recording bytes inside the load's transaction. Counted, not timed.
func TestLoadHashesEachRecordingOnce(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(testing.TB) consent.Store) {
		load := func(certs int) (reads map[string]int, bytes int) {
			c := &readCounter{reads: map[string]int{}}
			svc, err := consentkit.NewService(countingStore{open(t), c}, consentkit.Config{MaxChunkBytes: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			f := parse(t, recordedSeed(certs))
			sum, err := seed.Load(t.Context(), svc, f)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Certificates != 2*certs {
				t.Fatalf("%d certificates loaded, want %d", sum.Certificates, 2*certs)
			}
			var digests []consent.Digest
			if err := svc.Store().View(t.Context(), func(tx consent.Tx) error {
				for _, id := range []string{"c0", fmt.Sprintf("c%d", certs-1), "q0"} {
					cert, err := tx.Certificate(t.Context(), id)
					if err != nil {
						return err
					}
					digests = append(digests, cert.RecordingSHA256)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if digests[0].IsZero() || digests[1] != digests[0] || !digests[2].IsZero() {
				t.Errorf("recording digests of c0, c%d, q0: %x, %x, %x; want that of s twice, then none", certs-1, digests[0], digests[1], digests[2])
			}
			return c.reads, c.bytes
		}
		oneReads, oneBytes := load(1)
		manyReads, manyBytes := load(50)
		t.Logf("recording reads with 1 certificate a session: %v (%d bytes); with 50: %v (%d bytes)", oneReads, oneBytes, manyReads, manyBytes)
		if manyReads["s"] != oneReads["s"] || manyBytes != oneBytes {
			t.Errorf("with 50 certificates of session s the load read its recording %d times (%d bytes), with 1 certificate %d times (%d bytes): want the same",
				manyReads["s"], manyBytes, oneReads["s"], oneBytes)
		}
		if manyReads["s"] > 1 || manyReads["quiet"] > 0 {
			t.Errorf("recordings read %v times in the load; want s's at most once, quiet's (no events) never", manyReads)
		}
	})
}
