package consent

import "time"

// OperatorSession is a login to the operator's dashboard. The store keeps
// only the digest of the session's secret (the browser's cookie holds the
// secret), so that a logout on one instance ends it on every instance
// sharing the store.
//
// Expired sessions stay until [Tx.PruneOperatorSessions] deletes them:
// the purge job leaves them alone, and the dashboard prunes a few at each
// login, so a read must compare ExpiresAt with the time itself.
type OperatorSession struct {
	Digest    Digest // SHA-256 of the session's secret
	CreatedAt time.Time
	ExpiresAt time.Time // after CreatedAt
}

// Check checks s before a store writes it (CreateOperatorSession), so that
// every store refuses the same sessions: Invalid when its Digest is zero
// (the zero Digest means none, and no secret has it), when a time is
// outside the years 1 to 9999 (CheckTime), when CreatedAt is zero (here it
// cannot mean none), or when ExpiresAt is not after CreatedAt as the
// stores keep them, to the microsecond (UTC).
func (s *OperatorSession) Check() error {
	if s.Digest.IsZero() {
		return Errorf(Invalid, "an operator session needs the digest of its secret")
	}
	if err := checkTimes([]string{"created_at", "expires_at"}, s.CreatedAt, s.ExpiresAt); err != nil {
		return err
	}
	if s.CreatedAt.IsZero() {
		return Errorf(Invalid, "an operator session needs its created_at")
	}
	if !UTC(s.ExpiresAt).After(UTC(s.CreatedAt)) {
		return Errorf(Invalid, "an operator session's expires_at must be after its created_at")
	}
	return nil
}
