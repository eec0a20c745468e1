package sqlitestore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/consentkit/consentkit/internal/testwait"
)

// The durability and integrity settings are what D31 and the design rely
// on; a DSN typo would silently drop them.
func TestPragmas(t *testing.T) {
	s := openTemp(t)
	for _, db := range []struct {
		name string
		q    func(string, any) error
	}{
		{"write", func(p string, v any) error { return s.write.QueryRow("PRAGMA " + p).Scan(v) }},
		{"read", func(p string, v any) error { return s.read.QueryRow("PRAGMA " + p).Scan(v) }},
	} {
		var mode string
		var sync, fk, busy int
		if err := db.q("journal_mode", &mode); err != nil || mode != "wal" {
			t.Errorf("%s: journal_mode = %q, %v; want wal", db.name, mode, err)
		}
		if err := db.q("foreign_keys", &fk); err != nil || fk != 1 {
			t.Errorf("%s: foreign_keys = %d, %v; want 1", db.name, fk, err)
		}
		if err := db.q("busy_timeout", &busy); err != nil || busy != 10000 {
			t.Errorf("%s: busy_timeout = %d, %v; want 10000", db.name, busy, err)
		}
		if db.name == "write" {
			if err := db.q("synchronous", &sync); err != nil || sync != 2 {
				t.Errorf("write: synchronous = %d, %v; want 2 (FULL)", sync, err)
			}
		}
	}
	if _, err := s.read.Exec("CREATE TABLE x (a)"); err == nil {
		t.Error("the read pool accepted a write")
	}
}

func TestOpenRejectsMemory(t *testing.T) {
	for _, p := range []string{"", ":memory:", "a.db?mode=memory"} {
		if s, err := Open(p, Config{}); err == nil {
			_ = s.Close() // the test fails already
			t.Errorf("Open(%q) succeeded; a file path is required", p)
		}
	}
}

// Commits never checkpoint: the writer's automatic checkpoints are off and
// the Store's own loop copies the log into the database file beside it.
// With the loop off (a negative interval), SQLite's automatic ones remain.
func TestCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		auto     int  // the writer's wal_autocheckpoint
		grows    bool // the database file grows from a few small commits
	}{
		{10 * time.Millisecond, 0, true},
		{-1, 1000, false},
	} {
		path := filepath.Join(t.TempDir(), "c.db")
		s, err := Open(path, Config{CheckpointInterval: tc.interval})
		if err != nil {
			t.Fatal(err)
		}
		var auto int
		if err := s.write.QueryRow("PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != tc.auto {
			t.Errorf("interval %v: wal_autocheckpoint = %d, %v; want %d", tc.interval, auto, err, tc.auto)
		}
		before := fileSize(t, path)
		for i := range 20 {
			if _, err := s.write.Exec(fmt.Sprintf("CREATE TABLE t%d (a)", i)); err != nil {
				t.Fatal(err)
			}
		}
		grew := func() bool { return fileSize(t, path) > before }
		if tc.grows {
			// The loop's first ticks come whenever the machine gets to
			// them: wait for the growth as long as the test may run.
			testwait.Until(t, 10*time.Millisecond, grew)
		} else {
			// Nothing should checkpoint: 200 ms, twenty of the other
			// case's ticks, for a loop that should not be there to show
			// itself (a slow machine can only hide one, not fail this).
			time.Sleep(200 * time.Millisecond)
		}
		if grew := grew(); grew != tc.grows {
			t.Errorf("interval %v: the database file grew %v, want %v", tc.interval, grew, tc.grows)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("a second Close: %v", err)
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// openTemp opens a store in a file of t's temporary directory, closed
// when t ends.
func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "t.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}
