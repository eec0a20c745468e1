package storetest

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// BenchmarkDebit measures one charge: a transaction holding a conditional
// debit and its ledger entry, on one company's wallet, run one after another
// (Sequential) and from GOMAXPROCS×4 goroutines (Parallel), which all contend
// for the same wallet row as a busy company's charges do.
func BenchmarkDebit(b *testing.B, newStore NewStore) {
	price := 15 * wallet.Cent / 10
	setup := func(b *testing.B) (consent.Store, func(i int64) error) {
		s := newStore(b)
		update(b, s, func(tx consent.Tx) error {
			if err := tx.CreateCompany(ctx, &consent.Company{ID: "acme", Name: "Acme", CreatedAt: t0}); err != nil {
				return err
			}
			_, err := tx.Credit(ctx, entry("topup", "acme", wallet.TopUp, 1_000_000*wallet.Dollar, t0))
			return err
		})
		return s, func(i int64) error {
			return s.Update(ctx, func(tx consent.Tx) error {
				_, err := tx.Debit(ctx, &wallet.Entry{
					ID: fmt.Sprintf("d%d", i), CompanyID: "acme", Kind: wallet.ExactMatch,
					Amount: price, Reference: "cert-1", CreatedAt: t0,
				})
				return err
			})
		}
	}
	b.Run("Sequential", func(b *testing.B) {
		_, debit := setup(b)
		var i int64
		for b.Loop() {
			i++
			if err := debit(i); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		_, debit := setup(b)
		var n atomic.Int64
		b.SetParallelism(4)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := debit(n.Add(1)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkLease measures the lease of a webhook job and its end (handed
// back, due again at once) in a queue of due jobs of 100 companies, each
// job in a lane of its own, while 4 other leases are held: the work
// LeaseJob does to spread leases across companies (D53) grows with the
// jobs due.
func BenchmarkLease(b *testing.B, newStore NewStore) {
	for _, due := range []int{100, 10_000} {
		b.Run(fmt.Sprint("due=", due), func(b *testing.B) {
			s := newStore(b)
			list := make([]*consent.Job, due)
			for i := range list {
				list[i] = &consent.Job{Kind: consent.JobWebhook, Key: fmt.Sprintf("msg_%d:ep_%d", i, i), RunAfter: t0,
					CreatedAt: t0, CompanyID: fmt.Sprint("c", i%100), Lane: fmt.Sprint("ep_", i)}
			}
			for chunk := range slices.Chunk(list, 1000) {
				update(b, s, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, chunk) })
			}
			now := t0.Add(time.Minute)
			for i := range 4 {
				if _, err := lease(s, fmt.Sprint("held", i), now, consent.JobWebhook); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				j, err := lease(s, "w", now, consent.JobWebhook)
				if err != nil {
					b.Fatal(err)
				}
				err = s.Update(ctx, func(tx consent.Tx) error {
					return tx.EndJob(ctx, j.Kind, j.Key, "w", &consent.Job{Attempts: j.Attempts, RunAfter: now})
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
