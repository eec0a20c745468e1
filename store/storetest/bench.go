package storetest

import (
	"fmt"
	"sync/atomic"
	"testing"

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
