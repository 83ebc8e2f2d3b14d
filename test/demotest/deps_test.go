package demotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

// TestDepsInstallsWhatItIsAskedFor runs hack/deps.sh with its installers and
// hack/build-tools.sh replaced by scripts that record their calls: make
// demo's --no-prometheus2 leaves Debian's Prometheus out, and the tools are
// built either way.
func TestDepsInstallsWhatItIsAskedFor(t *testing.T) {
	root := buildtools.MustRepoRoot(t)
	script, err := os.ReadFile(filepath.Join(root, "hack", "deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--node", "--no-prometheus2", "helm", "prometheus3"}, []string{"build-tools.sh helm prometheus3", "install-node.sh"}},
		{[]string{"--node", "kwok"}, []string{"build-tools.sh kwok", "install-node.sh", "install-prometheus.sh"}},
		{[]string{"prometheus3"}, []string{"build-tools.sh prometheus3", "install-prometheus.sh"}},
	} {
		dir := t.TempDir()
		calls := filepath.Join(dir, "calls")
		hack := filepath.Join(dir, "hack")
		if err := os.Mkdir(hack, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{"deps.sh": string(script)}
		for _, stub := range []string{"install-node.sh", "install-prometheus.sh", "build-tools.sh"} {
			// build-tools.sh --missing: every tool is cached.
			files[stub] = "#!/usr/bin/env bash\n[[ $1 == --missing ]] && exit 0\necho \"" + stub + " $*\" | sed 's/ *$//' >> " + calls + "\n"
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(hack, name), []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command(filepath.Join(hack, "deps.sh"), tc.args...).CombinedOutput(); err != nil {
			t.Fatalf("deps.sh %v: %v\n%s", tc.args, err, out)
		}
		b, _ := os.ReadFile(calls)
		got := strings.Split(strings.TrimSpace(string(b)), "\n")
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("deps.sh %v ran %q, want %q", tc.args, got, tc.want)
		}
	}
	if err := exec.Command(filepath.Join(root, "hack", "deps.sh"), "--bogus").Run(); err == nil {
		t.Error("deps.sh --bogus succeeded, want a refusal")
	}
}
