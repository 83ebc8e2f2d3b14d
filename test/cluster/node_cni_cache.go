package cluster

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// nodeNetnsDir is where a real node's containerd (netns_mounts_under_state_dir)
// mounts pods' network namespaces, below the node root.
const nodeNetnsDir = "containerd/state/io.containerd.grpc.v1.cri/netns"

// removeCNICache removes the CNI result cache entries (in dir) of the node
// at root: those of its own network, and those of any network — the CRI's
// cni-loopback above all — whose interfaces live in a network namespace
// under root, or under the node root of a run whose directory is gone. A
// killed pod's sandbox is never torn down through CNI, so without this
// every run left an entry per pod. Entries of another runtime, or of a node
// whose root still exists (another run), are left alone.
func removeCNICache(dir, root string) error {
	return removeEntries(dir, func(e os.DirEntry, p string) bool {
		return strings.HasPrefix(e.Name(), cniNetworkName+"-") || cniCacheOfNode(p, root)
	})
}

// removeEntries removes the entries of dir that pick chooses (pick gets the
// entry and its path); a missing dir has none. It goes on past a failed
// removal and returns every error.
func removeEntries(dir string, pick func(e os.DirEntry, path string) bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !pick(e, p) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cniCacheOfNode reports whether the cache entry at p names a network
// namespace of the node at root, or of a real node whose root is gone.
func cniCacheOfNode(p, root string) bool {
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	var entry struct {
		Result struct {
			Interfaces []struct {
				Sandbox string `json:"sandbox"`
			} `json:"interfaces"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &entry) != nil {
		return false
	}
	for _, itf := range entry.Result.Interfaces {
		nodeRoot, _, ok := strings.Cut(itf.Sandbox, "/"+nodeNetnsDir+"/")
		if !ok || !filepath.IsAbs(nodeRoot) {
			continue
		}
		// The node at root, or an extra real node below it.
		if n, r := filepath.Clean(nodeRoot), filepath.Clean(root); n == r || strings.HasPrefix(n, r+"/") {
			return true
		}
		if _, err := os.Stat(nodeRoot); errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}
