package coverfiles

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestGrown(t *testing.T) {
	before := map[string]int{
		Module + "/a/x.go:1.1,2.2": 1,
		Module + "/a/y.go:1.1,2.2": 2,
	}
	after := map[string]int{
		Module + "/a/x.go:1.1,2.2":      1, // ran in the set-up only
		Module + "/a/y.go:1.1,2.2":      3, // ran again
		Module + "/a/z.go:5.1,6.2":      1, // new
		Module + "/a/fake/f.go:1.1,2.2": 4, // skipped
		Module + "/b/w.go:1.1,2.2":      0, // never ran
	}
	got := Grown(before, after, "/fake/")
	if want := []string{"a/y.go", "a/z.go"}; !slices.Equal(got, want) {
		t.Fatalf("Grown = %v, want %v", got, want)
	}
}

func TestParse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.out")
	body := "mode: set\n" + Module + "/a/x.go:1.1,2.2 3 1\n" + Module + "/a/x.go:1.1,2.2 3 2\n" + Module + "/a/y.go:4.1,5.2 1 0\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	got, err := parse(fh)
	if err != nil {
		t.Fatal(err)
	}
	if got[Module+"/a/x.go:1.1,2.2"] != 3 || got[Module+"/a/y.go:4.1,5.2"] != 0 || len(got) != 2 {
		t.Fatalf("parse = %v", got)
	}
	if err := os.WriteFile(path, []byte("mode: set\nbroken line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fh2, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh2.Close()
	if _, err := parse(fh2); err == nil {
		t.Fatal("a broken line parsed")
	}
}
