package teststore

import (
	"context"
	"errors"

	"github.com/consentkit/consentkit/consent"
)

// Rerun is a store that runs its next Update's function twice, as
// consent.Store allows and group commit does to a call whose batch broke:
// the first run is rolled back, then Between runs — a call that got in
// first — and then the function runs again and its outcome is kept.
type Rerun struct {
	consent.Store
	// Between, when set, makes the next Update run its function twice; it
	// is cleared as that Update begins.
	Between func()
}

var errRerun = errors.New("teststore: the transaction broke: run the function again")

// Update implements consent.Store.
func (s *Rerun) Update(ctx context.Context, fn func(consent.Tx) error) error {
	between := s.Between
	if between == nil {
		return s.Store.Update(ctx, fn)
	}
	s.Between = nil
	err := s.Store.Update(ctx, func(tx consent.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errRerun
	})
	if !errors.Is(err, errRerun) {
		return err
	}
	between()
	return s.Store.Update(ctx, fn)
}
