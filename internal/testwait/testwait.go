// Package testwait lets tests wait for what they start (servers, workers,
// browsers, goroutines) as long as the test binary allows, never for a span
// that assumes how fast the machine is: a test that waits for a fixed few
// seconds fails on a busy machine, where the work is right but slow.
//
//	if !testwait.Until(t, 10*time.Millisecond, func() bool { return srv.Ready() }) {
//		t.Fatal("the server never became ready")
//	}
//
// A wait ends shortly before the test's deadline (go test's -timeout), so
// that a test that waits in vain still reports what it saw before the
// binary is stopped.
package testwait

import (
	"testing"
	"time"
)

// Deadline returns a time shortly before t's deadline, and false when the
// test binary has none (-timeout 0): what a test gives a wait of its own,
// such as a connection's read deadline.
func Deadline(t *testing.T) (time.Time, bool) {
	deadline, ok := t.Deadline()
	if !ok {
		return time.Time{}, false
	}
	return deadline.Add(-min(30*time.Second, time.Until(deadline)/10)), true
}

// Near returns a channel that closes at Deadline, or nil, which never
// closes, when the test binary has none.
func Near(t *testing.T) <-chan time.Time {
	at, ok := Deadline(t)
	if !ok {
		return nil
	}
	return time.After(time.Until(at))
}

// Until polls cond every interval until it holds, or t's deadline is near
// (Near); it reports whether cond held.
func Until(t *testing.T, every time.Duration, cond func() bool) bool {
	stop := Near(t)
	for !cond() {
		select {
		case <-stop:
			return cond()
		case <-time.After(every):
		}
	}
	return true
}
