package demotest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runState is what a demo run holds on the machine mid-run.
type runState struct {
	makePID int
	dir     string       // its work directory (the owner record)
	procs   map[int]bool // its processes' PIDs
	list    []proc
	added   machine // what the run added to the machine (mid-run minus before)
	mounts  []string
}

// observeRun reads the running demo's state, and fails unless the cluster,
// its pods and kube-proxy's rules exist: the checks after the signal would
// prove nothing otherwise.
func observeRun(t *testing.T, makePID int, before machine) *runState {
	t.Helper()
	rec, err := os.ReadFile(ownerFile)
	if err != nil {
		t.Fatalf("no owner record of the running demo: %v", err)
	}
	r := &runState{makePID: makePID, procs: map[int]bool{}}
	if _, rest, ok := strings.Cut("\n"+string(rec), "\ndir="); ok {
		r.dir, _, _ = strings.Cut(rest, "\n")
	}
	if !strings.HasPrefix(r.dir, "/") {
		t.Fatalf("owner record without the run's work directory:\n%s", rec)
	}
	during := readMachine(t)
	r.added = machine{chains: set{}, links: set{}, cni: set{}, netns: set{}, cgroups: set{}}
	for _, p := range []struct{ now, was, into set }{
		{during.chains, before.chains, r.added.chains}, {during.links, before.links, r.added.links},
		{during.cni, before.cni, r.added.cni}, {during.netns, before.netns, r.added.netns},
		{during.cgroups, before.cgroups, r.added.cgroups},
	} {
		for _, k := range p.now.minus(p.was) {
			p.into[k] = true
		}
	}
	// Another run may have come and gone between before and now (the lock
	// is free between them): a CNI cache entry is the demo's only if it
	// names the demo's directory (a pod's network namespace under its node)
	// or is of the node's own network.
	for k := range r.added.cni {
		b, _ := os.ReadFile(filepath.Join(cniCacheDir, k))
		if !strings.HasPrefix(k, "ebbflow-") && !strings.Contains(string(b), r.dir+"/") {
			delete(r.added.cni, k)
		}
	}
	ps := processes()
	inCgroup := cgroupPIDs()
	slices.Sort(inCgroup)
	inCgroup = slices.Compact(inCgroup) // one entry per hierarchy
	desc := descendants(ps, makePID)
	for _, p := range ps {
		if desc[p.pid] || slices.Contains(inCgroup, p.pid) || strings.Contains(p.cmd, r.dir+"/") {
			r.procs[p.pid] = true
			r.list = append(r.list, p)
		}
	}
	r.mounts = mountsUnder(r.dir)
	changed, _ := sysctlChanges(before.sysctls, during.sysctls)
	t.Logf("mid-run: %d processes, %d pod processes, %d mounts, chains %v, interfaces %v, %d CNI cache entries, %d cgroup directories, %d kernel settings changed",
		len(r.list), len(inCgroup), len(r.mounts), r.added.chains.minus(nil), r.added.links.minus(nil), len(r.added.cni), len(r.added.cgroups), len(changed))
	r.requireRunning(t, len(inCgroup))
	return r
}

// requireRunning fails unless the run has a node with pods and kube-proxy's
// rules.
func (r *runState) requireRunning(t *testing.T, podProcs int) {
	t.Helper()
	var missing []string
	for _, c := range []string{"iptables nat KUBE-SERVICES", "iptables filter EBBFLOW-GUARD-FWD"} {
		if !r.added.chains[c] {
			missing = append(missing, "chain "+c)
		}
	}
	if !r.added.links["ebbflow0"] || !slices.ContainsFunc(r.added.links.minus(nil), func(l string) bool { return strings.HasPrefix(l, "veth") }) {
		missing = append(missing, "the bridge ebbflow0 and a pod's veth")
	}
	for _, bin := range []string{"kubelet", "kube-proxy", "containerd", "kube-apiserver", "etcd"} {
		if !slices.ContainsFunc(r.list, func(p proc) bool { return p.program() == bin }) {
			missing = append(missing, "process "+bin)
		}
	}
	if podProcs == 0 || len(r.added.cni) == 0 || len(r.added.cgroups) == 0 || len(r.mounts) == 0 {
		missing = append(missing, "pod processes, CNI cache entries, cgroups and mounts")
	}
	if len(missing) > 0 {
		t.Fatalf("the demo's table runs but its node lacks: %s", strings.Join(missing, "; "))
	}
}

// checkGone fails for everything of the run still on the machine.
func (r *runState) checkGone(t *testing.T, before, after machine) {
	t.Helper()
	for _, p := range r.list {
		if p.alive() {
			t.Errorf("process of the run left: %v", p)
		}
	}
	for _, p := range processes() {
		if p.pgrp == r.makePID || strings.Contains(p.cmd, r.dir+"/") {
			t.Errorf("process of the run's group or directory left: %v", p)
		}
	}
	if m := mountsUnder(r.dir); len(m) > 0 {
		t.Errorf("mounts of the run left: %v", m)
	}
	if _, err := os.Stat(r.dir); err == nil {
		t.Errorf("the run's work directory %s is left", r.dir)
	}
	for what, p := range map[string]struct{ added, now set }{
		"iptables chain": {r.added.chains, after.chains}, "interface": {r.added.links, after.links},
		"CNI cache entry": {r.added.cni, after.cni}, "network namespace": {r.added.netns, after.netns},
		"cgroup": {r.added.cgroups, after.cgroups},
	} {
		for k := range p.added {
			if p.now[k] {
				t.Errorf("%s of the run left: %s", what, k)
			}
		}
	}
	for _, c := range after.chains.minus(before.chains) {
		if strings.Contains(c, " KUBE-") || strings.Contains(c, " EBBFLOW-") || strings.Contains(c, " CNI-") {
			t.Errorf("iptables chain left: %s", c)
		}
	}
	changed, compared := sysctlChanges(before.sysctls, after.sysctls)
	for _, c := range changed {
		t.Errorf("kernel setting changed by the run: %s", c)
	}
	if compared < 100 {
		t.Errorf("compared only %d kernel settings", compared)
	}
	t.Logf("after: %d kernel settings compared with before the run", compared)
}

// sysctlChanges describes each setting of both maps whose value differs
// ("name: before → now") and counts the settings compared.
func sysctlChanges(was, now map[string]string) (changes []string, compared int) {
	for name, v := range was {
		if w, ok := now[name]; ok {
			compared++
			if w != v {
				changes = append(changes, fmt.Sprintf("%s: %q → %q", name, v, w))
			}
		}
	}
	return changes, compared
}

// mountsUnder returns the mount points of the host's mount table under dir.
func mountsUnder(dir string) []string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	var ms []string
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			ms = append(ms, f[4])
		}
	}
	return ms
}
