package blob

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// syncedDirs records the directories synced while it runs, relative to
// root.
func syncedDirs(t *testing.T, root string) *[]string {
	var synced []string
	old := syncDir
	syncDir = func(dir string) error {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		synced = append(synced, filepath.ToSlash(rel))
		return old(dir)
	}
	t.Cleanup(func() { syncDir = old })
	return &synced
}

// Every directory a Dir makes is synced into its parent before a file
// goes in, up from the root it is given, and a Delete syncs the key's
// directory: an object acknowledged, or a deletion, survives a crash of
// the machine. (That the syncs reach the disk only a crash could show;
// this shows they are asked for.)
func TestDirSyncsWhatItChanges(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	synced := syncedDirs(t, base)
	want := func(what string, dirs ...string) {
		t.Helper()
		for _, dir := range dirs {
			if !slices.Contains(*synced, dir) {
				t.Errorf("%s synced %v; want %s among them", what, *synced, dir)
			}
		}
		*synced = nil
	}

	d, err := NewDir(filepath.Join(base, "a", "root"))
	if err != nil {
		t.Fatal(err)
	}
	want("NewDir", ".", "a") // the parents of a and of a/root

	if _, err := d.Put(ctx, "recordings/s_1", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	want("Put into a new directory", "a/root", "a/root/recordings")

	if err := d.Lock(ctx, "recordings/s_1", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	want("the first Lock", "a/root", "a/root/.locks", "a/root/.locks/recordings")

	if _, err := d.Put(ctx, "recordings/s_2", strings.NewReader("y")); err != nil {
		t.Fatal(err)
	}
	*synced = nil
	if err := d.Delete(ctx, "recordings/s_2"); err != nil {
		t.Fatal(err)
	}
	want("Delete", "a/root/recordings")
	if err := d.Delete(ctx, "recordings/s_2"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	if err := d.Delete(ctx, "nowhere/s_3"); err != nil {
		t.Errorf("Delete in a missing directory: %v", err)
	}
}
