package demotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

// TestInstallersTakeTurns runs two copies of hack/install-node.sh (with the
// hack/lib/apt.sh it sources) side by side, as make test's two streams may,
// with a package missing and apt-get replaced by a script that logs when
// each call starts and ends: the calls of one installer must not overlap the
// other's (apt-get fails rather than waits on dpkg's lock). The copies' package, proof and policy-rc.d paths
// point into a temporary directory, and so does TMPDIR (the lock), so the
// machine's own installs are neither touched nor waited on.
func TestInstallersTakeTurns(t *testing.T) {
	root := buildtools.MustRepoRoot(t)
	dir := t.TempDir()
	proof, policy, aptLog := filepath.Join(dir, "proof"), filepath.Join(dir, "policy-rc.d"), filepath.Join(dir, "apt.log")
	installer := filepath.Join(dir, "hack", "install-node.sh")
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{filepath.Join(dir, "hack", "lib"), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copies := []struct {
		from, to string
		rewrites map[string]string
	}{
		{"hack/install-node.sh", installer, map[string]string{
			"\nPACKAGES=(":           "\nPACKAGES=(fakepkg)\n#(",
			"\nPROOFS=(":             "\nPROOFS=(" + proof + ")\n#(",
			"\ncontainerd --version": "\ntrue",
		}},
		{"hack/lib/apt.sh", filepath.Join(dir, "hack", "lib", "apt.sh"), map[string]string{
			"\nAPT_POLICY=/usr/sbin/policy-rc.d\n": "\nAPT_POLICY=" + policy + "\n",
		}},
	}
	for _, c := range copies {
		b, err := os.ReadFile(filepath.Join(root, c.from))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for old, repl := range c.rewrites {
			if strings.Count(s, old) != 1 {
				t.Fatalf("%s holds %q %d times, want once (the test's rewrite is out of date)", c.from, old, strings.Count(s, old))
			}
			s = strings.Replace(s, old, repl, 1)
		}
		if err := os.WriteFile(c.to, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fakeApt := "#!/usr/bin/env bash\necho \"start $$ $1\" >> " + aptLog + "\nsleep 0.3\n" +
		"[[ $1 != install ]] || : > " + proof + "\necho \"end $$ $1\" >> " + aptLog + "\n"
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte(fakeApt), 0o755); err != nil {
		t.Fatal(err)
	}

	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "TMPDIR="+dir)
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for range 2 {
		out := &strings.Builder{}
		cmd := exec.Command(installer)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("installer %d: %v\n%s", i, err, outs[i])
		}
	}

	b, err := os.ReadFile(aptLog)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 4 {
		t.Fatalf("apt-get log %q: want each call of both installers to start and end", lines)
	}
	// Each start is followed by its own end before anything else starts.
	for i := 0; i+1 < len(lines); i += 2 {
		start, end := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(start) != 3 || len(end) != 3 || start[0] != "start" || end[0] != "end" || start[1] != end[1] || start[2] != end[2] {
			t.Fatalf("apt-get calls overlap: %q", lines)
		}
	}
	if _, err := os.Stat(policy); !os.IsNotExist(err) {
		t.Errorf("policy-rc.d left at %s (stat: %v), want it removed after the installs", policy, err)
	}
}
