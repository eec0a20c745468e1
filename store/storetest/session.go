package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/wallet"
)

func testSession(t *testing.T, s consent.Store) {
	fixture(t, s)
	wantRead(t, s, consent.Tx.Session, "s1", session("s1", "acme", "acme-web"), "Session")
	view(t, s, func(tx consent.Tx) error {
		_, err := tx.Session(ctx, "s9")
		wantCode(t, "Session(unknown)", err, consent.NotFound)
		_, err = tx.Events(ctx, "s9")
		wantCode(t, "Events(unknown)", err, consent.NotFound)
		events, err := tx.Events(ctx, "s1")
		if err != nil || len(events) != 0 {
			t.Errorf("Events(new session) = %q, %v; want none", events, err)
		}
		return nil
	})
	for name, ses := range map[string]*consent.Session{
		"duplicate":        session("s1", "acme", "acme-web"),
		"unknown company":  session("s3", "nobody", "acme-web"),
		"unknown property": session("s3", "acme", "nothing"),
	} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateSession(ctx, ses) })
		want := consent.NotFound
		if name == "duplicate" {
			want = consent.Conflict
		}
		wantCode(t, "CreateSession("+name+")", err, want)
	}
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.AppendEvents(ctx, "s9", []byte(`[{}]`), t0) })
	wantCode(t, "AppendEvents(unknown)", err, consent.NotFound)
}

func testEventsByteIdentical(t *testing.T, s consent.Store) {
	fixture(t, s)
	big := bytes.Repeat([]byte(`{"type":3,"data":{"source":1,"positions":[{"x":1,"y":2}]},"timestamp":1795301391553},`), 4000)
	chunks := [][]byte{
		[]byte(`[{"type":4,"data":{"href":"https://a.example/","width":1024,"height":625},"timestamp":1795301391553}]`),
		[]byte("[ {\"type\":2, \"data\" : {\"text\":\"tab\\there ünïcødé ✓ \\u00e9\"}}\n ]"),
		append(append([]byte("["), big[:len(big)-1]...), ']'),
		[]byte(`[{"nul":"\u0000","big":12345678901234567890123,"float":1.50}]`),
	}
	for _, c := range chunks {
		update(t, s, func(tx consent.Tx) error { return tx.AppendEvents(ctx, "s1", c, t0) })
	}
	var total int64
	for _, c := range chunks {
		total += int64(len(c))
	}
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Events(ctx, "s1")
		if err != nil {
			return err
		}
		if len(got) != len(chunks) {
			t.Fatalf("Events returned %d chunks, want %d", len(got), len(chunks))
		}
		for i := range chunks {
			if !bytes.Equal(got[i], chunks[i]) {
				t.Errorf("chunk %d differs: got %d bytes, want %d", i, len(got[i]), len(chunks[i]))
			}
		}
		ses, err := tx.Session(ctx, "s1")
		if err != nil {
			return err
		}
		if ses.EventChunks != len(chunks) || ses.EventBytes != total {
			t.Errorf("session counts %d chunks, %d bytes; want %d, %d", ses.EventChunks, ses.EventBytes, len(chunks), total)
		}
		other, err := tx.Events(ctx, "s2")
		if err != nil || len(other) != 0 {
			t.Errorf("Events(s2) = %d chunks, %v; want none", len(other), err)
		}
		return nil
	})
}

// testEmptyEventChunk: an empty chunk, nil or not, is a chunk of no bytes
// on every store (the SQL stores' data column is NOT NULL).
func testEmptyEventChunk(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		for _, chunk := range [][]byte{nil, {}} {
			if err := tx.AppendEvents(ctx, "s1", chunk, t0); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		ses, err := tx.Session(ctx, "s1")
		if err != nil || ses.EventChunks != 2 || ses.EventBytes != 0 {
			t.Errorf("session after two empty chunks: %+v, %v; want 2 chunks of 0 bytes", ses, err)
		}
		for seq := range 2 {
			if b, err := tx.EventChunk(ctx, "s1", seq); err != nil || len(b) != 0 {
				t.Errorf("EventChunk(%d) = %q, %v; want empty", seq, b, err)
			}
		}
		return nil
	})
}

func testUpdateSession(t *testing.T, s consent.Store) {
	fixture(t, s)
	want := session("s1", "acme", "acme-web")
	want.RetentionStatus, want.VideoStatus, want.ExpiresAt = consent.RetentionRetained, consent.VideoConverted, t0.AddDate(5, 0, 0)
	want.Video = consent.Video{Path: "videos/s1.mp4", Bytes: 123456, SHA256: consent.DigestOf("mp4"), Duration: 5642 * time.Millisecond}
	changed := *want
	changed.CompanyID, changed.PropertyID, changed.CreatedAt = "other", "other-web", t0.Add(time.Hour) // not written
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSession(ctx, &changed) })
	wantRead(t, s, consent.Tx.Session, "s1", want, "Session after UpdateSession")
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.UpdateSession(ctx, session("s9", "acme", "acme-web")) })
	wantCode(t, "UpdateSession(unknown)", err, consent.NotFound)
}

// testSessions: out[i] is ids[i]'s session or nil, a repeated id gets a
// copy of its own, and the read sees the transaction's own writes.
func testSessions(t *testing.T, s consent.Store) {
	withSessions(t, s, 3)
	one := func(id string) *consent.Session { return read(t, s, consent.Tx.Session, id) }
	ids := []string{"b2", "nobody", "s2", "b0", "b2", "s1"}
	got := sessions(t, s, ids...)
	want := []*consent.Session{one("b2"), nil, one("s2"), one("b0"), one("b2"), one("s1")}
	wantSame(t, want, got, opts, "Sessions(%q)", ids)
	if len(got) == len(ids) && got[0] == got[4] {
		t.Errorf("Sessions gave a repeated id one *Session for both places, want a copy each")
	}
	if got := sessions(t, s); len(got) != 0 {
		t.Errorf("Sessions() = %v, want none", got)
	}
	if got := sessions(t, s, "x", "y"); len(got) != 2 || got[0] != nil || got[1] != nil {
		t.Errorf("Sessions(unknown, unknown) = %v, want [nil nil]", got)
	}
	update(t, s, func(tx consent.Tx) error {
		ses := session("b9", "acme", "acme-web")
		if err := tx.CreateSession(ctx, ses); err != nil {
			return err
		}
		ses.RetentionStatus = consent.RetentionRetained
		if err := tx.UpdateSession(ctx, ses); err != nil {
			return err
		}
		got, err := tx.Sessions(ctx, []string{"b9", "b1"})
		if err != nil {
			return err
		}
		if len(got) != 2 || got[0] == nil || got[0].RetentionStatus != consent.RetentionRetained || got[1] == nil || got[1].ID != "b1" {
			t.Errorf("Sessions in the transaction that wrote them = %+v, want b9 retained and b1", got)
		}
		return nil
	})
}

// testUpdateSessions: every session is written as UpdateSession writes
// it; an unknown one writes none.
func testUpdateSessions(t *testing.T, s consent.Store) {
	withSessions(t, s, 4)
	before := sessions(t, s, "b0", "b1", "b2", "b3", "s1")
	retained := func(ses *consent.Session, i int) *consent.Session {
		n := *ses
		n.RetentionStatus, n.VideoStatus, n.ExpiresAt = consent.RetentionRetained, consent.VideoPending, t0.AddDate(5, 0, i)
		if i == 1 { // every field UpdateSession writes, NULL columns included
			n.Video = consent.Video{Path: "videos/b1.mp4", Bytes: 4242, SHA256: consent.DigestOf("mp4"), Duration: 1500 * time.Millisecond}
			n.ClosedAt = t0.Add(time.Minute)
		}
		return &n
	}
	list := []*consent.Session{retained(before[2], 2), retained(before[0], 0), retained(before[1], 1)}
	written := make([]*consent.Session, len(list))
	for i, ses := range list {
		n := *ses
		written[i] = &n
		ses.CompanyID, ses.PropertyID, ses.CreatedAt = "other", "other-web", t0.Add(time.Hour) // not written
	}
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSessions(ctx, list) })
	want := []*consent.Session{written[1], written[2], written[0], before[3], before[4]}
	wantSame(t, want, sessions(t, s, "b0", "b1", "b2", "b3", "s1"), opts, "sessions after UpdateSessions")
	// Back to where they were, in one more call: it writes over anything.
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSessions(ctx, before[:3]) })
	wantSame(t, before, sessions(t, s, "b0", "b1", "b2", "b3", "s1"), opts, "sessions after a second UpdateSessions")
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSessions(ctx, nil) })

	for _, c := range []struct {
		name string
		list []*consent.Session
		code consent.Code
	}{
		{"an unknown session", []*consent.Session{retained(before[0], 0), retained(session("b9", "acme", "acme-web"), 9)}, consent.NotFound},
	} {
		update(t, s, func(tx consent.Tx) error {
			wantCode(t, "UpdateSessions with "+c.name, tx.UpdateSessions(ctx, c.list), c.code)
			return nil // commit: the refusal wrote nothing
		})
		wantSame(t, before, sessions(t, s, "b0", "b1", "b2", "b3", "s1"), opts, "UpdateSessions with %s changed sessions", c.name)
	}

	// More sessions than one statement binds on SQLite: all are written,
	// or, when the last is unknown, none.
	const many = 2500
	var ids []string
	update(t, s, func(tx consent.Tx) error {
		for i := range many {
			ids = append(ids, fmt.Sprintf("m%04d", i))
			if err := tx.CreateSession(ctx, session(ids[i], "acme", "acme-web")); err != nil {
				return err
			}
		}
		return nil
	})
	fresh := sessions(t, s, ids...)
	list = make([]*consent.Session, many)
	for i, ses := range fresh {
		list[i] = retained(ses, i)
	}
	unknown := slices.Concat(list[1:], []*consent.Session{retained(session("m9999", "acme", "acme-web"), 0)})
	update(t, s, func(tx consent.Tx) error {
		wantCode(t, "UpdateSessions of 2,500 with the last unknown", tx.UpdateSessions(ctx, unknown), consent.NotFound)
		return nil // commit: the refusal wrote nothing
	})
	wantSame(t, fresh, sessions(t, s, ids...), opts, "UpdateSessions of 2,500 with the last unknown changed sessions")
	update(t, s, func(tx consent.Tx) error { return tx.UpdateSessions(ctx, list) })
	wantSame(t, list, sessions(t, s, ids...), opts, "sessions after UpdateSessions of 2,500")
}

// testReadThenWriteIsAtomic: a rule checked on a session read inside Update
// still holds at commit. 20 concurrent "retain once" transactions end with
// exactly one success and one charge.
func testReadThenWriteIsAtomic(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.Credit(ctx, entry("topup", "acme", wallet.TopUp, wallet.Dollar, t0))
		return err
	})
	const n = 20
	var (
		ok, conflicts      int
		errAlreadyRetained = consent.Errorf(consent.Conflict, "already retained")
	)
	concurrently(n, func(i int, locked func(func())) {
		err := s.Update(ctx, func(tx consent.Tx) error {
			ses, err := tx.Session(ctx, "s1")
			if err != nil {
				return err
			}
			if ses.RetentionStatus == consent.RetentionRetained {
				return errAlreadyRetained
			}
			// Widen the window between the check and the write, so that a
			// store whose reads do not lock is caught.
			time.Sleep(2 * time.Millisecond)
			if _, err := tx.Debit(ctx, entry(fmt.Sprintf("r%02d", i), "acme", wallet.RetainSingle, 10*wallet.Cent, t0)); err != nil {
				return err
			}
			ses.RetentionStatus = consent.RetentionRetained
			return tx.UpdateSession(ctx, ses)
		})
		locked(func() {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, errAlreadyRetained):
				conflicts++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	})
	if ok != 1 || conflicts != n-1 {
		t.Errorf("%d succeeded and %d conflicted; want 1 and %d", ok, conflicts, n-1)
	}
	view(t, s, func(tx consent.Tx) error {
		if bal, err := tx.Balance(ctx, "acme"); err != nil || bal != 90*wallet.Cent {
			t.Errorf("balance = %v, %v; want 0.9 (one charge)", bal, err)
		}
		return nil
	})
}

// EachEventChunk gives the chunks Events returns, in order, byte for byte,
// one call each; it stops at fn's first error and returns it; an unknown
// session is NotFound and calls nothing.
func testEachEventChunk(t *testing.T, s consent.Store) {
	fixture(t, s)
	chunks := [][]byte{[]byte(`[{"type":4,"timestamp":1}]`), []byte("[ ]"), []byte(`[{"type":3,"timestamp":2,"x":"ü\u2028"}]`)}
	update(t, s, func(tx consent.Tx) error {
		for _, c := range chunks {
			if err := tx.AppendEvents(ctx, "s1", c, t0); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		var got [][]byte
		err := tx.EachEventChunk(ctx, "s1", func(c []byte) error {
			got = append(got, bytes.Clone(c))
			return nil
		})
		if err != nil || len(got) != len(chunks) {
			t.Fatalf("EachEventChunk: %q, %v; want %q", got, err, chunks)
		}
		for i := range chunks {
			if !bytes.Equal(got[i], chunks[i]) {
				t.Errorf("chunk %d = %q, want %q", i, got[i], chunks[i])
			}
		}
		calls, stop := 0, errors.New("stop")
		err = tx.EachEventChunk(ctx, "s1", func([]byte) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("EachEventChunk stopping at the first chunk: %v after %d calls", err, calls)
		}
		calls = 0
		err = tx.EachEventChunk(ctx, "s9", func([]byte) error { calls++; return nil })
		wantCode(t, "EachEventChunk(unknown)", err, consent.NotFound)
		if calls != 0 {
			t.Errorf("EachEventChunk(unknown) called fn %d times", calls)
		}
		return nil
	})
}
