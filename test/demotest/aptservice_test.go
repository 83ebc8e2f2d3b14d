package demotest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

// installerCopy writes hack/install-node.sh and the hack/lib/apt.sh it
// sources into dir with the rewrites given (each text must occur once in its
// file), and returns the copy of install-node.sh.
func installerCopy(t *testing.T, dir string, node, apt map[string]string) string {
	t.Helper()
	root := buildtools.MustRepoRoot(t)
	if err := os.MkdirAll(filepath.Join(dir, "hack", "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from     string
		rewrites map[string]string
	}{{"hack/install-node.sh", node}, {"hack/lib/apt.sh", apt}} {
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
		if err := os.WriteFile(filepath.Join(dir, c.from), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "hack", "install-node.sh")
}

// TestInstallerLeavesExistingServices runs a copy of hack/install-node.sh
// under a fake systemd (a systemctl that lists unit files from a file and
// logs every other call) with a package missing whose install adds
// fakepkg.service beside an existing containerd.service: the installer may
// disable the unit its install added, and must not touch containerd.service
// or any other unit that was there before. A second run with a policy-rc.d
// that allows starts must refuse before apt-get runs.
func TestInstallerLeavesExistingServices(t *testing.T) {
	dir := t.TempDir()
	proof, policy := filepath.Join(dir, "proof"), filepath.Join(dir, "policy-rc.d")
	units, calls, sysd, bin := filepath.Join(dir, "units"), filepath.Join(dir, "systemctl.log"), filepath.Join(dir, "systemd"), filepath.Join(dir, "bin")
	for _, d := range []string{sysd, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	installer := installerCopy(t, dir, map[string]string{
		"\nPACKAGES=(":           "\nPACKAGES=(fakepkg)\n#(",
		"\nPROOFS=(":             "\nPROOFS=(" + proof + ")\n#(",
		"\ncontainerd --version": "\ntrue",
	}, map[string]string{
		"\nAPT_POLICY=/usr/sbin/policy-rc.d\n": "\nAPT_POLICY=" + policy + "\n",
		"\nAPT_SYSTEMD=/run/systemd/system\n":  "\nAPT_SYSTEMD=" + sysd + "\n",
	})
	scripts := map[string]string{
		"apt-get": "#!/usr/bin/env bash\n[[ $1 != install ]] || { : > " + proof + "; echo 'fakepkg.service enabled enabled' >> " + units + "; }\n",
		"systemctl": "#!/usr/bin/env bash\nif [[ $1 == list-unit-files ]]; then cat " + units + "; exit 0; fi\n" +
			"echo \"$*\" >> " + calls + "\n",
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reset := func() {
		t.Helper()
		for _, f := range []string{proof, calls} {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(units, []byte("containerd.service enabled enabled\nssh.service enabled enabled\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func() (string, error) {
		cmd := exec.Command(installer)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "TMPDIR="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	reset()
	if out, err := run(); err != nil {
		t.Fatalf("installer: %v\n%s", err, out)
	}
	b, err := os.ReadFile(calls)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	got := strings.TrimSpace(string(b))
	if got != "disable --now fakepkg.service" {
		t.Errorf("systemctl calls besides list-unit-files: %q, want only \"disable --now fakepkg.service\" (the unit the install added)", got)
	}

	reset()
	if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := run()
	if err == nil {
		t.Fatalf("installer with a policy-rc.d allowing starts succeeded, want a refusal\n%s", out)
	}
	if !strings.Contains(out, policy) || !strings.Contains(out, "want 101") {
		t.Errorf("refusal %q does not name the policy file %s and the answer wanted", out, policy)
	}
	if _, err := os.Stat(proof); !os.IsNotExist(err) {
		t.Errorf("apt-get install ran under a policy-rc.d allowing starts (stat %s: %v)", proof, err)
	}
}
