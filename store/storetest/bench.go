package storetest

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
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
// job in a lane of its own, while 4 other leases are held (D53): all due
// since the same moment, and due one after another (",spread"), as jobs
// queued over time are.
func BenchmarkLease(b *testing.B, newStore NewStore) {
	for _, c := range []struct {
		due    int
		spread bool
	}{{100, false}, {10_000, false}, {10_000, true}} {
		name := fmt.Sprint("due=", c.due)
		if c.spread {
			name += ",spread"
		}
		b.Run(name, func(b *testing.B) {
			s := newStore(b)
			list := make([]*consent.Job, c.due)
			for i := range list {
				at := t0
				if c.spread {
					at = t0.Add(time.Duration(i) * time.Millisecond)
				}
				list[i] = &consent.Job{Kind: consent.JobWebhook, Key: fmt.Sprintf("msg_%d:ep_%d", i, i), RunAfter: at,
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

// BenchmarkCountJobs measures the counts an attestation's ask reads
// before it enqueues (D49): the waiting jobs of a kind (",kind") and those
// of one company (",company"), in a queue of 10,000 attestation jobs of
// 100 companies.
func BenchmarkCountJobs(b *testing.B, newStore NewStore) {
	s := newStore(b)
	list := make([]*consent.Job, 10_000)
	for i := range list {
		list[i] = &consent.Job{Kind: consent.JobAttest, Key: fmt.Sprint("cert_", i), RunAfter: t0.Add(time.Duration(i) * time.Millisecond),
			CreatedAt: t0, CompanyID: fmt.Sprint("c", i%100)}
	}
	for chunk := range slices.Chunk(list, 1000) {
		update(b, s, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, chunk) })
	}
	for _, c := range []struct {
		name  string
		count func(tx consent.Tx) (int, error)
		want  int
	}{
		{"queued=10000,kind", func(tx consent.Tx) (int, error) { return tx.CountJobs(ctx, consent.JobAttest) }, 10_000},
		{"queued=10000,company", func(tx consent.Tx) (int, error) { return tx.CountCompanyJobs(ctx, consent.JobAttest, "c7") }, 100},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				view(b, s, func(tx consent.Tx) error {
					n, err := c.count(tx)
					if err == nil && n != c.want {
						err = fmt.Errorf("counted %d, want %d", n, c.want)
					}
					return err
				})
			}
		})
	}
}

// BenchmarkAppendEvents measures what capture asks of a store for one
// chunk of a recording: the session and its property read, and a 16 KiB
// chunk appended, in one transaction, from 32 goroutines each recording a
// session of its own (as the load program's capture scenario does). It
// reports the process's CPU time per chunk (cpu-µs/op): with group commit
// the calls share transactions, and the wall time per call is then less
// than the work. For PostgreSQL it holds the client's side only, not the
// server's.
func BenchmarkAppendEvents(b *testing.B, newStore NewStore) {
	s := newStore(b)
	const writers = 32
	withSessions(b, s, writers)
	chunk := []byte(`[` + strings.Repeat(`{"type":3,"data":{"source":1,"positions":[{"x":1,"y":2,"id":3,"timeOffset":0}]},"timestamp":1700000000000},`, 160))
	chunk = append(chunk[:16<<10-1], ']')
	chunk[len(chunk)-2] = ' ' // a comma cut off: the bytes are the store's, not checked here
	var next atomic.Int64
	b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	before := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprintf("b%d", next.Add(1)-1)
		for pb.Next() {
			err := s.Update(ctx, func(tx consent.Tx) error {
				ses, err := tx.Session(ctx, id)
				if err != nil {
					return err
				}
				if _, err := tx.Property(ctx, ses.PropertyID); err != nil {
					return err
				}
				return tx.AppendEvents(ctx, id, chunk, t0)
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-before).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime returns the processor time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
