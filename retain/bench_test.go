package retain_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/wallet"
)

// BenchmarkRetain compares a Retain API batch of retain.MaxBatch sessions
// with a single retention on every store (the aim: a batch of 100 should
// cost at most about three single ones). Each iteration retains sessions
// made for it, outside the timer; ns/op is one call.
//
//	go test ./retain -run '^$' -bench Retain -benchmem
func BenchmarkRetain(b *testing.B) {
	for _, k := range teststore.Kinds {
		for _, n := range []int{1, retain.MaxBatch} {
			b.Run(fmt.Sprintf("%s/sessions=%d", k.Name, n), func(b *testing.B) {
				st := k.Open(b)
				svc := benchService(b, st, consentkit.Config{})
				r := retain.New(svc)
				made := 0
				ids := make([]string, n)
				for b.Loop() {
					b.StopTimer()
					err := st.Update(ctx, func(tx consent.Tx) error {
						for i := range ids {
							made++
							ids[i] = fmt.Sprintf("s%07d", made)
							if _, err := svc.StartSessionTx(ctx, tx, consentkit.SessionParams{ID: ids[i], CompanyID: "acme", PropertyID: "web"}); err != nil {
								return err
							}
						}
						_, err := svc.TopUpTx(ctx, tx, "acme", wallet.Amount(n)*wallet.Dollar, "")
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if n == 1 {
						_, err = r.Retain(ctx, "acme", "acme", ids[0])
					} else {
						var res *retain.BatchResult
						res, err = r.RetainBatch(ctx, "acme", "acme", ids)
						if err == nil && res.Retained != n {
							err = fmt.Errorf("retained %d of %d", res.Retained, n)
						}
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMoveRecording moves one finished session of the project's form
// recording (14.5 kB of events in 3 chunks) from each store to a
// directory (D52): ns/op is one move — its three transactions, the
// object's compression and write. The sessions are made outside the
// timer.
//
//	go test ./retain -run '^$' -bench MoveRecording -benchmem
func BenchmarkMoveRecording(b *testing.B) {
	raw, err := os.ReadFile("../testdata/rrweb-form-recording.json")
	if err != nil {
		b.Fatal(err)
	}
	var events []json.RawMessage
	if err := json.Unmarshal(raw, &events); err != nil {
		b.Fatal(err)
	}
	third := len(events) / 3
	var chunks []json.RawMessage
	for _, part := range [][]json.RawMessage{events[:third], events[third : 2*third], events[2*third:]} {
		c, _ := json.Marshal(part)
		chunks = append(chunks, c)
	}
	for _, k := range teststore.Kinds {
		b.Run(k.Name, func(b *testing.B) {
			blobs, err := blob.NewDir(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			svc := benchService(b, k.Open(b), consentkit.Config{Recordings: blobs})
			made := 0
			for b.Loop() {
				b.StopTimer()
				id := fmt.Sprintf("s%d", made)
				made++
				if _, err := svc.StartSession(ctx, consentkit.SessionParams{ID: id, CompanyID: "acme", PropertyID: "web"}); err != nil {
					b.Fatal(err)
				}
				for _, c := range chunks {
					if _, err := svc.AppendEvents(ctx, id, c); err != nil {
						b.Fatal(err)
					}
				}
				if err := svc.Store().Update(ctx, func(tx consent.Tx) error {
					ses, err := tx.Session(ctx, id)
					if err != nil {
						return err
					}
					ses.ClosedAt = svc.Now()
					return tx.UpdateSession(ctx, ses)
				}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if n, err := svc.MoveRecordings(ctx, 1); n != 1 || err != nil {
					b.Fatalf("MoveRecordings = %d, %v", n, err)
				}
			}
		})
	}
}

// benchService is a Service on st with company acme and its property web.
func benchService(b *testing.B, st consent.Store, cfg consentkit.Config) *consentkit.Service {
	b.Helper()
	svc, err := consentkit.NewService(st, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateCompany(ctx, consentkit.CompanyParams{ID: "acme", Name: "Acme"}); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.AddProperty(ctx, consentkit.PropertyParams{ID: "web", CompanyID: "acme", Name: "Form"}); err != nil {
		b.Fatal(err)
	}
	return svc
}
