package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveCNICache: the sweep removes the CNI cache entries of its own
// node (any network, the CRI's cni-loopback included), of the extra real
// nodes below its root, and of real nodes whose root is gone; another live
// node's (one whose root only begins like ours too), another runtime's and an
// unreadable entry stay.
func TestRemoveCNICache(t *testing.T) {
	tmp := t.TempDir()
	cache := filepath.Join(tmp, "results")
	ours := filepath.Join(tmp, "run-a", "node")
	live := filepath.Join(tmp, "run-b", "node")
	dead := filepath.Join(tmp, "run-c", "node") // never created: the run is gone
	extra := filepath.Join(ours, "nodes", extraRealNodeName(1))
	lookalike := ours + "x"
	for _, d := range []string{cache, ours, live, extra, lookalike} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entry := func(name, sandbox string) {
		body := fmt.Sprintf(`{"kind":"cniCacheV1","containerId":"x","networkName":"cni-loopback","result":{"interfaces":[{"name":"lo","sandbox":%q}]}}`, sandbox)
		if err := os.WriteFile(filepath.Join(cache, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	netns := func(root string) string { return filepath.Join(root, nodeNetnsDir, "cni-1234") }
	entry("cni-loopback-ours-lo", netns(ours))
	entry("cni-loopback-dead-lo", netns(dead))
	entry("cni-loopback-live-lo", netns(live))
	entry("cni-loopback-extra-lo", netns(extra))
	entry("cni-loopback-lookalike-lo", netns(lookalike))
	entry("cni-loopback-foreign-lo", "/var/run/netns/cni-5678")
	entry("cni-loopback-relative-lo", "gone/node/"+nodeNetnsDir+"/cni-1")
	entry(cniNetworkName+"-pod-eth0", "/var/run/netns/cni-9")
	if err := os.WriteFile(filepath.Join(cache, "cni-loopback-broken-lo"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := removeCNICache(cache, ours); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	want := []string{"cni-loopback-broken-lo", "cni-loopback-foreign-lo", "cni-loopback-live-lo", "cni-loopback-lookalike-lo", "cni-loopback-relative-lo"}
	if !slices.Equal(names, want) {
		t.Errorf("left %v, want %v", names, want)
	}
	if err := removeCNICache(filepath.Join(tmp, "none"), ours); err != nil {
		t.Errorf("a missing cache directory: %v", err)
	}
}
