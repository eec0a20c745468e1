package consentkit_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

// The number rules of the checked Tx: counts and statuses that fit 32 bits
// (a job's attempts at most MaxJobAttempts), and ledger amounts of one
// micro-dollar to wallet.MaxBalance, a debit's sum included.

// TestCheckedIntRange: the counts and statuses that the SQL stores keep in
// 32-bit integer columns (a job's attempts, a delivery's attempt and HTTP
// status, an idempotency key's answered status) are Invalid outside -2^31
// to 2^31-1, and a job's attempts over consent.MaxJobAttempts (PostgreSQL's
// integer refused more with an internal error, while SQLite and memory
// kept it); nothing is written.
func TestCheckedIntRange(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		const over, under = math.MaxInt32 + 1, math.MinInt32 - 1
		fixture(t, s, endpointAndJob("purge", "held"), func(tx consent.Tx) error {
			_, err := tx.ClaimIdempotencyKey(ctx, newKeyRecord("company:acme", "k", 1, t0), t0)
			return err
		})
		if _, err := lease(s, "w1", t0, "purge"); err != nil {
			t.Fatalf("lease: %v", err)
		}
		delivery := func(attempt, status int) *consent.WebhookDelivery {
			return &consent.WebhookDelivery{EndpointID: "ep-a", MessageID: "msg_1", Attempt: attempt, At: t0, Status: status}
		}
		withAttempts := func(key string, n int) *consent.Job {
			return &consent.Job{Kind: consent.JobConvert, Key: key, Attempts: n, RunAfter: t0, CreatedAt: t0}
		}
		for name, write := range map[string]func(tx consent.Tx) error{
			"EnqueueJob(attempts 2^31)":     func(tx consent.Tx) error { return tx.EnqueueJob(ctx, withAttempts("a", over)) },
			"EnqueueJob(attempts -2^31-1)":  func(tx consent.Tx) error { return tx.EnqueueJob(ctx, withAttempts("a", under)) },
			"EnqueueJob(attempts over max)": func(tx consent.Tx) error { return tx.EnqueueJob(ctx, withAttempts("a", consent.MaxJobAttempts+1)) },
			"EnqueueJobs(attempts 2^31)": func(tx consent.Tx) error {
				return tx.EnqueueJobs(ctx, []*consent.Job{withAttempts("a", 1), withAttempts("b", over)})
			},
			"EndJob(attempts 2^31)": func(tx consent.Tx) error {
				return tx.EndJob(ctx, "purge", "held", "w1", &consent.Job{Attempts: over, RunAfter: t0})
			},
			"AppendWebhookDelivery(attempt 2^31)":   func(tx consent.Tx) error { return tx.AppendWebhookDelivery(ctx, delivery(over, 200)) },
			"AppendWebhookDelivery(status 2^31)":    func(tx consent.Tx) error { return tx.AppendWebhookDelivery(ctx, delivery(1, over)) },
			"AppendWebhookDelivery(status -2^31-1)": func(tx consent.Tx) error { return tx.AppendWebhookDelivery(ctx, delivery(1, under)) },
			"AnswerIdempotencyKey(status 2^31)": func(tx consent.Tx) error {
				return tx.AnswerIdempotencyKey(ctx, "company:acme", "k", over, nil)
			},
		} {
			wantCode(t, name, s.Update(ctx, write), consent.Invalid)
		}
		mustView(t, s, func(tx consent.Tx) error {
			if _, err := tx.Job(ctx, consent.JobConvert, "a"); err == nil {
				t.Errorf("a refused job was written")
			}
			if j, err := tx.Job(ctx, "purge", "held"); err != nil || j.LeaseOwner != "w1" || j.Attempts != 1 {
				t.Errorf("job after the refused EndJob = %+v, %v; want it leased by w1, one attempt", j, err)
			}
			if log, err := tx.WebhookDeliveries(ctx, "ep-a", 0, 10); err != nil || len(log) != 0 {
				t.Errorf("delivery log after the refusals = %v, %v; want none", log, err)
			}
			return nil
		})
	})
}

// TestCheckedNonPositiveAmounts: a ledger entry's amount is positive (the
// SQL stores' CHECK): a credit or debit of zero or less is refused as
// Invalid, alone or among others, and changes nothing.
func TestCheckedNonPositiveAmounts(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s, tenDollars)
		ledger, bal := walletOf(t, s, "acme")
		for _, amount := range []wallet.Amount{0, -wallet.Cent} {
			for name, write := range map[string]func(tx consent.Tx) error{
				"Credit": func(tx consent.Tx) error {
					_, err := tx.Credit(ctx, newEntry("bad", "acme", wallet.TopUp, amount, t0))
					return err
				},
				"Debit": func(tx consent.Tx) error {
					_, err := tx.Debit(ctx, newEntry("bad", "acme", wallet.ExactMatch, amount, t0))
					return err
				},
				"DebitAll": func(tx consent.Tx) error {
					_, err := tx.DebitAll(ctx, []*wallet.Entry{newEntry("ok", "acme", wallet.RetainBatch, wallet.Cent, t0),
						newEntry("bad", "acme", wallet.RetainBatch, amount, t0)})
					return err
				},
			} {
				err := s.Update(ctx, write)
				wantCode(t, fmt.Sprintf("%s of %v", name, amount), err, consent.Invalid)
				unchangedWallet(t, s, fmt.Sprintf("%s of %v", name, amount), ledger, bal)
			}
		}
	})
}

// TestCheckedBalanceLimit: no ledger entry is of more than
// wallet.MaxBalance, and no debit's entries sum to more: such a write is
// refused as Invalid (wallet.ErrBalanceLimit) and changes nothing, so no
// balance or sum ever overflows. (A credit that would take a balance over
// the limit is the store's to refuse: storetest.)
func TestCheckedBalanceLimit(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s, tenDollars)
		ledger, bal := walletOf(t, s, "acme")
		huge := wallet.Amount(math.MaxInt64)
		for name, write := range map[string]func(tx consent.Tx) error{
			"a credit of MaxInt64": func(tx consent.Tx) error {
				_, err := tx.Credit(ctx, newEntry("over", "acme", wallet.TopUp, huge, t0))
				return err
			},
			"a debit of MaxInt64": func(tx consent.Tx) error {
				_, err := tx.Debit(ctx, newEntry("over", "acme", wallet.ExactMatch, huge, t0))
				return err
			},
			"debits summing over the limit": func(tx consent.Tx) error {
				_, err := tx.DebitAll(ctx, []*wallet.Entry{newEntry("o1", "acme", wallet.RetainBatch, wallet.MaxBalance, t0),
					newEntry("o2", "acme", wallet.RetainBatch, 1, t0)})
				return err
			},
			"debits of MaxInt64 twice": func(tx consent.Tx) error {
				_, err := tx.DebitAll(ctx, []*wallet.Entry{newEntry("o1", "acme", wallet.RetainBatch, huge, t0),
					newEntry("o2", "acme", wallet.RetainBatch, huge, t0)})
				return err
			},
		} {
			if err := s.Update(ctx, write); !errors.Is(err, wallet.ErrBalanceLimit) || consent.ErrorCode(err) != consent.Invalid {
				t.Errorf("%s: %v, want ErrBalanceLimit (Invalid)", name, err)
			}
			unchangedWallet(t, s, name, ledger, bal)
		}
	})
}

// TestCheckedNegativeZero: a visibility's number that is negative zero, a
// consent's or the certificate's, is Invalid (PostgreSQL keeps the consents
// in jsonb, which reads -0 back as +0 where memory and SQLite keep -0), and
// nothing is written.
func TestCheckedNegativeZero(t *testing.T) {
	t.Parallel()
	overStores(t, func(t *testing.T, s consent.Store) {
		fixture(t, s)
		negZero := math.Copysign(0, -1)
		for name, edit := range map[string]func(c *consent.Certificate){
			"consent font_size_px": func(c *consent.Certificate) {
				c.Records[0].Visibility = &consent.Visibility{FontSizePx: negZero, ContrastRatio: 4.5}
			},
			"consent contrast_ratio": func(c *consent.Certificate) {
				c.Records[1].Visibility = &consent.Visibility{FontSizePx: 16, ContrastRatio: negZero}
			},
			"certificate font_size_px": func(c *consent.Certificate) {
				c.Visibility = &consent.Visibility{FontSizePx: negZero, ContrastRatio: 4.5}
			},
		} {
			c := newCertificate("cert-1", "acme", "acme-web", "s1")
			edit(c)
			wantCode(t, name, s.Update(ctx, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, c) }), consent.Invalid)
		}
		mustView(t, s, func(tx consent.Tx) error {
			if _, err := tx.Certificate(ctx, "cert-1"); consent.ErrorCode(err) != consent.NotFound {
				t.Errorf("a refused certificate was written (%v)", err)
			}
			return nil
		})
		c := newCertificate("cert-2", "acme", "acme-web", "s1")
		c.Visibility = &consent.Visibility{FontSizePx: 0, ContrastRatio: 4.5}
		mustUpdate(t, s, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, c) })
	})
}

// A certificate kept before a bound was added to what a store is given — a
// visibility of -0, a client address of more than 64 bytes — can still be
// retained: UpdateCertificate checks what the store writes, the retention
// status and date, and refuses those alone.
func TestCheckedUpdateCertificateChecksWhatItWrites(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) consent.Store{
		"memory": func(tb testing.TB) consent.Store { return teststore.Memory(tb) },
		"sqlite": func(tb testing.TB) consent.Store { return teststore.SQLite(tb) },
	} {
		t.Run(name, func(t *testing.T) {
			raw := open(t)
			svc, err := consentkit.NewService(raw, consentkit.Config{})
			if err != nil {
				t.Fatal(err)
			}
			s := svc.Store()
			fixture(t, s)
			old := newCertificate("cert-old", "acme", "acme-web", "s1")
			old.Records[0].Visibility = &consent.Visibility{FontSizePx: math.Copysign(0, -1), ContrastRatio: 4.5}
			old.ClientIP = strings.Repeat("2001:db8::1,", 10)
			mustUpdate(t, raw, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, old) }) // as a store kept it before
			old.RetentionStatus, old.ExpiresAt = consent.RetentionRetained, t0.Add(5*365*24*time.Hour)
			mustUpdate(t, s, func(tx consent.Tx) error { return tx.UpdateCertificate(ctx, old) })
			mustView(t, s, func(tx consent.Tx) error {
				c, err := tx.Certificate(ctx, "cert-old")
				if err != nil || c.RetentionStatus != consent.RetentionRetained || !c.ExpiresAt.Equal(old.ExpiresAt) {
					t.Errorf("after the update: %+v, %v", c, err)
				}
				return nil
			})
			old.ExpiresAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
			wantCode(t, "an expiry past the year 9999", s.Update(ctx, func(tx consent.Tx) error { return tx.UpdateCertificate(ctx, old) }), consent.Invalid)
			old.ExpiresAt, old.RetentionStatus = t0, "retained\x00"
			wantCode(t, "a status that is not text", s.Update(ctx, func(tx consent.Tx) error { return tx.UpdateCertificate(ctx, old) }), consent.Invalid)
		})
	}
}
