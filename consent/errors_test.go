package consent_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

// deadlock stands for a driver's error that a store retries on, as
// pgstore does Postgres's 40P01.
type deadlock struct{}

func (deadlock) Error() string { return "deadlock detected" }

// A failure past the charge is a storage failure whatever its code, and a
// driver's error stays in its chain, for the store's retry to find.
func TestStorageFailure(t *testing.T) {
	for _, err := range []error{
		consent.Errorf(consent.NotFound, "session not found"),
		consent.Errorf(consent.Conflict, "already exists"),
		fmt.Errorf("debit: %w", wallet.ErrInsufficientFunds),
		deadlock{},
		fmt.Errorf("pgstore: %w", deadlock{}),
	} {
		got := consent.StorageFailure("retain s1", err)
		if code := consent.ErrorCode(got); code != consent.Internal {
			t.Errorf("StorageFailure(%v) has code %q, want internal", err, code)
		}
		if want := "retain s1: " + err.Error(); got.Error() != want {
			t.Errorf("StorageFailure(%v) = %q, want %q", err, got, want)
		}
		var d deadlock
		if errors.As(got, &d) != errors.As(err, &d) {
			t.Errorf("StorageFailure(%v): errors.As finds the driver's error %v, in err %v",
				err, errors.As(got, &d), errors.As(err, &d))
		}
	}
}
