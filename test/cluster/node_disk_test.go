package cluster

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestNodeDiskVerdict(t *testing.T) {
	if err := nodeDiskVerdict("/tmp/x", minNodeDiskFree); err != nil {
		t.Errorf("exactly the minimum free: %v", err)
	}
	err := nodeDiskVerdict("/tmp/x", minNodeDiskFree-1<<30)
	if err == nil {
		t.Fatal("1 GiB below the minimum: no error")
	}
	for _, want := range []string{"/tmp/x", "3.0 GiB", "2.0 GiB", "DiskPressure", evictionDiskAvailable} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	free, err := diskFree(t.TempDir())
	if err != nil || free == 0 {
		t.Errorf("diskFree of a temporary directory: %d, %v", free, err)
	}
	if _, err := diskFree("/nonexistent/ebbflow"); err == nil {
		t.Error("diskFree of a missing directory: no error")
	}
}

// TestKubeletEvictionThresholds: the real node's kubelet evicts on disk at
// an absolute threshold, never a percentage of a big shared filesystem.
func TestKubeletEvictionThresholds(t *testing.T) {
	c := &Cluster{pki: &pki{caFile: "/ca.crt"}, nodes: planNodes("/tmp/run", 0, []int{10250, 10248})}
	var cfg struct {
		EvictionHard map[string]string `json:"evictionHard"`
	}
	if err := yaml.Unmarshal([]byte(c.kubeletConfig(c.nodes[0], "/s.crt", "/s.key")), &cfg); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"nodefs.available", "imagefs.available"} {
		if got := cfg.EvictionHard[k]; got != evictionDiskAvailable {
			t.Errorf("evictionHard[%s] = %q, want %q", k, got, evictionDiskAvailable)
		}
	}
}
