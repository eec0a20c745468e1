package sqlrow

import (
	"io/fs"
	"slices"
	"strings"
)

// Migrations returns the versions of the schema migrations in fsys's
// migrations directory, in the order they apply: each file's name without
// ".sql", sorted.
func Migrations(fsys fs.FS) ([]string, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	versions := make([]string, len(names))
	for i, n := range names {
		versions[i] = strings.TrimSuffix(strings.TrimPrefix(n, "migrations/"), ".sql")
	}
	slices.Sort(versions)
	return versions, nil
}

// Pending returns the versions of all that applied lacks, in order.
func Pending(all, applied []string) []string {
	var out []string
	for _, v := range all {
		if !slices.Contains(applied, v) {
			out = append(out, v)
		}
	}
	return out
}
