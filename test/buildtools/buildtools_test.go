package buildtools

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParsePathsAndLookup(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "prometheus")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	vals := ParsePaths([]byte("building…\nPROMETHEUS3=" + bin + "\nPROMTOOL3=/nonexistent/promtool\nEMPTY=\n"))
	if got, err := Lookup(vals, Key("prometheus3")); err != nil || got != bin {
		t.Errorf("Lookup(PROMETHEUS3) = %q, %v; want %q", got, err, bin)
	}
	if _, err := Lookup(vals, "PROMTOOL3"); err == nil {
		t.Error("Lookup accepted a path that does not exist")
	}
	if _, err := Lookup(vals, "EMPTY"); err == nil {
		t.Error("Lookup accepted an empty path")
	}
	if _, err := Lookup(vals, Key("kube-apiserver")); err == nil {
		t.Error("Lookup accepted a key the script did not print")
	}
	if k := Key("kube-controller-manager"); k != "KUBE_CONTROLLER_MANAGER" {
		t.Errorf("Key = %q", k)
	}
}

// The script's real output shape: cache lines first, then each tool's.
func TestParsePathsPrometheus3(t *testing.T) {
	out := "EBBFLOW_TOOLS_CACHE=/c\nEBBFLOW_TOOLS_BIN=/c/bin\nPROMETHEUS3=/c/prometheus3-v0.313.5/prometheus\nPROMTOOL3=/c/prometheus3-v0.313.5/promtool\n"
	if got := ParsePaths([]byte(out))["PROMETHEUS3"]; got != "/c/prometheus3-v0.313.5/prometheus" {
		t.Errorf("PROMETHEUS3 = %q", got)
	}
	if _, ok := ParsePaths([]byte("PROMTOOL3=/x\nPROMETHEUS3=\n"))["PROMETHEUS3"]; ok {
		t.Error("an empty PROMETHEUS3= line was taken as a path")
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "build-tools.sh")); err != nil {
		t.Errorf("RepoRoot %s holds no hack/build-tools.sh: %v", root, err)
	}
}
