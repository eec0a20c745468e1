package httpadapter_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/wallet"
)

// SeedVar, set to a number, replays TestSameSequenceEveryStore with that
// seed.
const seedVar = "CONSENTKIT_SEED"

// TestSameSequenceEveryStore: one seeded random sequence of requests —
// every request of the endpoint cases, some sent with an Idempotency-Key
// from a small pool (so keys are replayed and reused with other bodies),
// with top-ups and a moving clock between them — sent one at a time to a
// fresh fixture on each store gets the same status, body and replay mark
// at every step, and leaves the same balances. The seed is printed; set
// CONSENTKIT_SEED to replay it.
func TestSameSequenceEveryStore(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedVar); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedVar, v, err)
		}
		seed = s
	}
	t.Logf("seed %d (replay with %s=%d)", seed, seedVar, seed)
	const steps = 1500
	pool := append(append([]httpCase{}, verificationCases...), retainCases...)

	type step struct {
		what, answer string
	}
	run := func(t *testing.T, st consent.Store) ([]step, map[string]wallet.Amount) {
		e := setup(t, st)
		h := e.handler(t, httpadapter.Config{OptOutPerMinute: -1, RetainPerMinute: -1})
		rng := rand.New(rand.NewPCG(seed, 0))
		out := make([]step, 0, steps)
		for i := range steps {
			switch n := rng.IntN(100); {
			case n < 1:
				amount := wallet.Amount(rng.IntN(3)+1) * wallet.Cent
				bal, err := e.svc.TopUp(ctx, "poor", amount, fmt.Sprint("top-up-", i))
				out = append(out, step{fmt.Sprint("top up poor ", amount), fmt.Sprint(bal, err)})
			case n < 6:
				e.clock.t = e.clock.t.Add(time.Duration(rng.IntN(600)) * time.Second)
				out = append(out, step{"clock", e.clock.t.String()})
			default:
				tc := pool[rng.IntN(len(pool))]
				r := tc.req
				what := tc.name
				if rng.IntN(3) == 0 {
					key := fmt.Sprint("k", rng.IntN(5))
					r = keyed(r, key)
					what += " with " + key
				}
				rec := serve(h, r)
				out = append(out, step{what, fmt.Sprintf("%d replayed=%q %s", rec.Code, rec.Header().Get(httpadapter.ReplayedHeader), rec.Body)})
			}
		}
		balances := map[string]wallet.Amount{}
		for _, c := range companies {
			balances[c] = e.balance(t, c)
		}
		return out, balances
	}

	var first []step
	var firstBalances map[string]wallet.Amount
	var firstKind string
	for _, k := range teststore.Kinds {
		t.Run(k.Name, func(t *testing.T) {
			got, balances := run(t, k.Open(t))
			if first == nil {
				first, firstBalances, firstKind = got, balances, k.Name
				// The sequence exercises what it claims to: charges,
				// refusals, replays and keys reused with other bodies.
				seen := map[string]bool{}
				for _, s := range got {
					seen[s.answer[:3]] = true
					if strings.Contains(s.answer, `replayed="true"`) {
						seen["replay"] = true
					}
				}
				for _, want := range []string{"200", "400", "401", "402", "403", "404", "409", "422", "replay"} {
					if !seen[want] {
						t.Errorf("no %s answer in %d steps", want, steps)
					}
				}
				return
			}
			for i := range got {
				if got[i] != first[i] {
					t.Fatalf("step %d (%s): %s answered\n%s\nwhile %s answered\n%s", i, got[i].what, k.Name, got[i].answer, firstKind, first[i].answer)
				}
			}
			if fmt.Sprint(balances) != fmt.Sprint(firstBalances) {
				t.Errorf("balances %v on %s, %v on %s", balances, k.Name, firstBalances, firstKind)
			}
		})
	}
}
