package pgstore

import "testing"

// A call that succeeded costs no allocation to map: mapErr's errors.As
// target is allocated only for an error (every statement goes through it).
func TestMapErrOfNilAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = mapErr(nil) }); n != 0 {
		t.Errorf("mapErr(nil) allocates %.0f times; want none", n)
	}
}
