package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// SetRecording keeps the key alone first (the chunks stay), then the
// moved recording, dropping the chunks and keeping the counts; the purge
// clears it; an unknown session is NotFound. AppendEvents sets LastEventAt.
func testSetRecording(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		for i, c := range []string{`[{"type":4}]`, `[{"type":3}]`} {
			if err := tx.AppendEvents(ctx, "s1", []byte(c), t0.Add(time.Duration(i)*time.Second)); err != nil {
				return err
			}
		}
		return tx.SetRecording(ctx, "s1", consent.Recording{Key: "recordings/s1"})
	})
	view(t, s, func(tx consent.Tx) error {
		ses := sessionIn(t, tx, "s1")
		want := session("s1", "acme", "acme-web")
		want.EventChunks, want.EventBytes, want.LastEventAt = 2, 24, t0.Add(time.Second)
		want.Recording = consent.Recording{Key: "recordings/s1"}
		wantSame(t, want, ses, opts, "session being moved")
		if chunks, err := tx.Events(ctx, "s1"); err != nil || len(chunks) != 2 {
			t.Errorf("Events while being moved = %d chunks, %v; want 2", len(chunks), err)
		}
		return nil
	})
	moved := consent.Recording{Key: "recordings/s1", Bytes: 77, SHA256: consent.DigestOf("rec"), At: t0.Add(time.Minute)}
	update(t, s, func(tx consent.Tx) error { return tx.SetRecording(ctx, "s1", moved) })
	view(t, s, func(tx consent.Tx) error {
		ses := sessionIn(t, tx, "s1")
		if ses.Recording != moved || ses.EventChunks != 2 || ses.EventBytes != 24 {
			t.Errorf("moved session: %+v, %d chunks, %d bytes; want %+v, 2, 24", ses.Recording, ses.EventChunks, ses.EventBytes, moved)
		}
		if chunks, err := tx.Events(ctx, "s1"); err != nil || len(chunks) != 0 {
			t.Errorf("Events once moved = %d chunks, %v; want none in the database", len(chunks), err)
		}
		_, err := tx.EventChunk(ctx, "s1", 0)
		wantCode(t, "EventChunk once moved", err, consent.NotFound)
		if s2 := sessionIn(t, tx, "s2"); s2.Recording != (consent.Recording{}) {
			t.Errorf("another session's recording = %+v; want none", s2.Recording)
		}
		return nil
	})
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.SetRecording(ctx, "s9", moved) })
	wantCode(t, "SetRecording(unknown)", err, consent.NotFound)

	update(t, s, func(tx consent.Tx) error {
		_, err := tx.PurgeSessions(ctx, t0.Add(100*24*time.Hour), 10)
		return err
	})
	view(t, s, func(tx consent.Tx) error {
		ses := sessionIn(t, tx, "s1")
		if ses.Recording != (consent.Recording{}) || !ses.LastEventAt.Equal(t0.Add(time.Second)) {
			t.Errorf("purged session: recording %+v, last event %v; want none, %v", ses.Recording, ses.LastEventAt, t0.Add(time.Second))
		}
		return nil
	})
}

// SessionsToMove lists the finished recordings still in the database:
// closed, being moved or idle since idleBefore, with chunks, not moved and
// not purged; idle longest first, then by id; at most limit.
func testSessionsToMove(t *testing.T, s consent.Store) {
	withSessions(t, s, 7)
	update(t, s, func(tx consent.Tx) error {
		// b0, b1: idle since t0 and t0+1m; b2 active at t0+10m; b3 closed
		// but active at t0+10m; b4 being moved, active at t0+10m; b5
		// moved; b6 no chunks; s2 idle since t0, purged below.
		at := map[string]time.Time{"b0": t0, "b1": t0.Add(time.Minute), "b2": t0.Add(10 * time.Minute),
			"b3": t0.Add(10 * time.Minute), "b4": t0.Add(10 * time.Minute), "b5": t0, "s2": t0}
		for id, when := range at {
			if err := tx.AppendEvents(ctx, id, []byte(`[{"type":4}]`), when); err != nil {
				return err
			}
		}
		b3 := session("b3", "acme", "acme-web")
		b3.ClosedAt = t0.Add(10 * time.Minute)
		if err := tx.UpdateSession(ctx, b3); err != nil {
			return err
		}
		if err := tx.SetRecording(ctx, "b4", consent.Recording{Key: "recordings/b4"}); err != nil {
			return err
		}
		s2 := session("s2", "other", "other-web")
		s2.ExpiresAt = t0
		if err := tx.UpdateSession(ctx, s2); err != nil {
			return err
		}
		if _, err := tx.PurgeSessions(ctx, t0, 10); err != nil {
			return err
		}
		return tx.SetRecording(ctx, "b5", consent.Recording{Key: "recordings/b5", Bytes: 1, SHA256: consent.DigestOf("x"), At: t0})
	})
	for _, c := range []struct {
		idleBefore time.Time
		limit      int
		want       []string
	}{
		{t0.Add(5 * time.Minute), 10, []string{"b0", "b1", "b3", "b4"}},
		{t0, 10, []string{"b0", "b3", "b4"}},
		{t0.Add(-time.Second), 10, []string{"b3", "b4"}},
		{t0.Add(time.Hour), 10, []string{"b0", "b1", "b2", "b3", "b4"}},
		{t0.Add(time.Hour), 2, []string{"b0", "b1"}},
	} {
		view(t, s, func(tx consent.Tx) error {
			got, err := tx.SessionsToMove(ctx, c.idleBefore, c.limit)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("SessionsToMove(%v, %d) = %v, %v; want %v", c.idleBefore.Sub(t0), c.limit, got, err, c.want)
			}
			return nil
		})
	}
}

// sessionIn reads the session in tx, failing the test without it.
func sessionIn(t *testing.T, tx consent.Tx, id string) *consent.Session {
	t.Helper()
	ses, err := tx.Session(ctx, id)
	if err != nil {
		t.Fatalf("Session(%s): %v", id, err)
	}
	return ses
}
