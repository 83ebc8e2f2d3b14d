package cluster

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sysctlSnapshot reads every writable kernel setting under /proc/sys: all of
// them, not only nodeKernelSettings, so a test finds a setting the run
// changed that nobody listed. Per-interface settings of interfaces other
// than "all", "default" and those that outlive a run are compared only
// where both snapshots have them (the run's bridge and veths come and go).
func sysctlSnapshot(t *testing.T) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir("/proc/sys", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm()&0o200 == 0 || info.Mode().Perm()&0o400 == 0 {
			return nil
		}
		name := strings.ReplaceAll(strings.TrimPrefix(p, "/proc/sys/"), "/", ".")
		if volatileSysctls[name] {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil // write-only or refused on read (vm.compact_memory …)
		}
		snap[name] = strings.Join(strings.Fields(string(b)), " ")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// volatileSysctls change by themselves.
var volatileSysctls = map[string]bool{
	"kernel.ns_last_pid": true,
}

// assertSysctlsUnchanged fails for every setting in both snapshots whose
// value differs.
func assertSysctlsUnchanged(t *testing.T, before, after map[string]string) {
	t.Helper()
	assertSysctlsAsBefore(t, "after the run", before, after)
}

// assertSysctlsAsBefore fails for every setting in both snapshots whose
// value differs; when says when the second was taken.
func assertSysctlsAsBefore(t *testing.T, when string, before, after map[string]string) {
	t.Helper()
	n := 0
	for name, old := range before {
		now, ok := after[name]
		if !ok {
			continue
		}
		n++
		if now != old {
			t.Errorf("kernel setting %s is %q %s, %q before", name, now, when, old)
		}
	}
	if n < 100 {
		t.Errorf("compared only %d kernel settings; the snapshot read too few", n)
	}
	t.Logf("%d kernel settings compared before and %s", n, when)
}

func TestNodeOwnerRecord(t *testing.T) {
	o := nodeOwner{root: "/tmp/x/node", dir: "/tmp/x", ownsDir: true,
		kernel: map[string]string{"net.ipv4.ip_forward": "0", "kernel.panic": "1"}}
	got, ok := decodeNodeOwner(o.encode())
	if !ok || got.root != o.root || got.dir != o.dir || !got.ownsDir || len(got.kernel) != 2 ||
		got.kernel["kernel.panic"] != "1" || got.kernel["net.ipv4.ip_forward"] != "0" {
		t.Errorf("round trip of %+v: %+v", o, got)
	}
	if !strings.Contains(o.encode(), "\nip_forward=0\n") {
		t.Errorf("record lacks the ip_forward line earlier runs read:\n%s", o.encode())
	}
	// A record of a run before the kernel settings: root and ip_forward.
	old, ok := decodeNodeOwner("root=/tmp/y/node\nip_forward=1\n")
	if !ok || old.root != "/tmp/y/node" || old.dir != "" || old.kernel["net.ipv4.ip_forward"] != "1" || len(old.kernel) != 1 {
		t.Errorf("earlier record: %+v", old)
	}
}

func TestSplitRule(t *testing.T) {
	for line, want := range map[string]string{
		`-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES`: `-A|PREROUTING|-m|comment|--comment|kubernetes service portals|-j|KUBE-SERVICES`,
		`-A INPUT -j KUBE-FIREWALL`:                             `-A|INPUT|-j|KUBE-FIREWALL`,
		`-A OUTPUT -m comment --comment "say \"hi\"" -j KUBE-X`: `-A|OUTPUT|-m|comment|--comment|say "hi"|-j|KUBE-X`,
		`-A X -m comment --comment "" -j KUBE-Y`:                `-A|X|-m|comment|--comment||-j|KUBE-Y`,
	} {
		if got := strings.Join(splitRule(line), "|"); got != want {
			t.Errorf("splitRule(%q) = %q, want %q", line, got, want)
		}
	}
}

// withoutNodeSettings is a snapshot without nodeKernelSettings, the settings
// a run changes while it lives, and those the kernel changes with
// net.ipv4.ip_forward: a change of it resets every interface's
// configuration to a router's defaults (forwarding on, accept_redirects off:
// the kernel's ip-sysctl documentation), and back when it is restored.
func withoutNodeSettings(snap map[string]string) map[string]string {
	out := maps.Clone(snap)
	for _, s := range nodeKernelSettings {
		delete(out, s.name)
	}
	for name := range out {
		if rest, ok := strings.CutPrefix(name, "net.ipv4.conf."); ok &&
			(strings.HasSuffix(rest, ".forwarding") || strings.HasSuffix(rest, ".accept_redirects")) {
			delete(out, name)
		}
	}
	return out
}
