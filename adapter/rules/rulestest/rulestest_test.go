package rulestest

import (
	"io/fs"
	"strings"
	"testing"
)

// TestEveryFileIsValid: every shared rule file parses and serves something, and
// has a name constant.
func TestEveryFileIsValid(t *testing.T) {
	names, err := fs.Glob(files, "testdata/*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no shared rule files: %v", err)
	}
	known := map[string]bool{PodsAndQueue: true, Users: true, ClusterQueue: true}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "testdata/"), ".yaml")
		if !known[name] {
			t.Errorf("%s has no name constant", n)
		}
		if set := Parse(t, name); len(set.Rules) == 0 {
			t.Errorf("%s serves nothing", n)
		}
	}
	if len(names) != len(known) {
		t.Errorf("%d files for %d names", len(names), len(known))
	}
}
