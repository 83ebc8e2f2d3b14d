package cluster

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveContainerLogLinks: the sweep removes the links to the node's
// pods' logs (dangling or not) and leaves another node's links, files and a
// link whose target only begins like the root.
func TestRemoveContainerLogLinks(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "containers")
	root := filepath.Join(tmp, "run", "node")
	if err := os.MkdirAll(filepath.Join(root, "pod-logs", "ns_p_1", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"ours.log":      filepath.Join(root, "pod-logs", "ns_p_1", "c", "0.log"),
		"dangling.log":  filepath.Join(root, "pod-logs", "gone", "c", "0.log"),
		"extra.log":     filepath.Join(root, "nodes", "ebbflow-node-2", "pod-logs", "x", "0.log"),
		"other.log":     "/var/log/pods/ns_other_2/c/0.log",
		"lookalike.log": root + "x/pod-logs/y/0.log",
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := removeContainerLogLinks(dir, root); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if want := []string{"file.log", "lookalike.log", "other.log"}; !slices.Equal(names, want) {
		t.Errorf("left %v, want %v", names, want)
	}
	if err := removeContainerLogLinks(filepath.Join(tmp, "none"), root); err != nil {
		t.Errorf("no links directory: %v", err)
	}
}
