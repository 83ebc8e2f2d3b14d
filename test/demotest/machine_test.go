package demotest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// set is a set of names of machine state ("iptables nat KUBE-SERVICES",
// "ebbflow0", …).
type set map[string]bool

// minus returns the names of s that are not in o.
func (s set) minus(o set) []string {
	var d []string
	for k := range s {
		if !o[k] {
			d = append(d, k)
		}
	}
	return d
}

// machine is the machine-wide state a real-node run may change. Each part
// is read whole, so that a test compares what a run added (mid-run minus
// before) with what is there after, whatever other runs did in between.
type machine struct {
	chains  set               // "<tool> <table> <chain>" of iptables and ip6tables
	links   set               // network interfaces of the host's namespace
	cni     set               // CNI result cache entries
	netns   set               // named network namespaces
	cgroups set               // directories of the node's cgroup, every hierarchy
	sysctls map[string]string // every readable and writable /proc/sys setting
}

// nodeCgroup is the real node's cgroup root in every hierarchy (the
// kubelet's cgroupRoot, test/cluster).
const nodeCgroup = "ebbflow-node"

// cniCacheDir holds the CNI result cache entries (libcni's default).
const cniCacheDir = "/var/lib/cni/results"

func readMachine(t *testing.T) machine {
	t.Helper()
	m := machine{chains: set{}, links: dirNames("/sys/class/net"), cni: dirNames(cniCacheDir),
		netns: dirNames("/var/run/netns"), cgroups: set{}, sysctls: readSysctls(t)}
	for _, tool := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.CommandContext(context.Background(), tool).Output()
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		table := ""
		for line := range strings.Lines(string(out)) {
			switch {
			case strings.HasPrefix(line, "*"):
				table = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, ":"):
				m.chains[fmt.Sprintf("%s %s %s", strings.TrimSuffix(tool, "-save"), table, strings.Fields(line[1:])[0])] = true
			}
		}
	}
	for _, d := range nodeCgroupDirs() {
		m.cgroups[d] = true
	}
	return m
}

// dirNames returns the entries of dir (none when it does not exist).
func dirNames(dir string) set {
	s := set{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		s[e.Name()] = true
	}
	return s
}

// nodeCgroupDirs returns the node's cgroup directories (cgroup v1: one per
// hierarchy; v2: one).
func nodeCgroupDirs() []string {
	v1, _ := filepath.Glob("/sys/fs/cgroup/*/" + nodeCgroup)
	v2, _ := filepath.Glob("/sys/fs/cgroup/" + nodeCgroup)
	return append(v1, v2...)
}

// cgroupPIDs returns the processes in the node's cgroups and below.
func cgroupPIDs() []int {
	var pids []int
	for _, d := range nodeCgroupDirs() {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// readSysctls reads every kernel setting under /proc/sys that can be both
// read and written, values with their whitespace collapsed.
func readSysctls(t *testing.T) map[string]string {
	t.Helper()
	var files []string
	_ = filepath.WalkDir("/proc/sys", func(p string, e fs.DirEntry, _ error) error {
		if e != nil && e.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	values := map[string]string{}
	for _, p := range files {
		key := strings.ReplaceAll(strings.TrimPrefix(p, "/proc/sys/"), "/", ".")
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm()&0o600 != 0o600 || key == "kernel.ns_last_pid" { // moves with every fork
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			values[key] = strings.Join(strings.Fields(string(b)), " ")
		}
	}
	if len(values) == 0 {
		t.Fatal("no kernel setting read under /proc/sys")
	}
	return values
}

// proc is a process as /proc/<pid>/stat shows it; pid and start time name
// it across PID reuse.
type proc struct {
	pid, ppid, pgrp int
	start           string // clock ticks after boot
	cmd             string
}

func (p proc) String() string { return fmt.Sprintf("%d (%s)", p.pid, p.cmd) }

// program is the base name of the process's executable as its command line
// names it.
func (p proc) program() string {
	first, _, _ := strings.Cut(p.cmd, " ")
	return filepath.Base(first)
}

// readProc reads one process; ok is false when it is gone.
func readProc(pid int) (proc, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:]) // state ppid pgrp session … starttime is the 20th
	if i < 0 || len(f) < 20 {
		return proc{}, false
	}
	p := proc{pid: pid, start: f[19]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgrp, _ = strconv.Atoi(f[2])
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	p.cmd = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	return p, true
}

// processes returns every process on the machine.
func processes() []proc {
	entries, _ := os.ReadDir("/proc")
	var ps []proc
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := readProc(pid); ok {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// alive reports whether p still runs (the same process, not a reused PID).
func (p proc) alive() bool {
	now, ok := readProc(p.pid)
	return ok && now.start == p.start
}

// descendants returns root and every process below it.
func descendants(ps []proc, root int) map[int]bool {
	in := map[int]bool{root: true}
	for grew := true; grew; {
		grew = false
		for _, p := range ps {
			if in[p.ppid] && !in[p.pid] {
				in[p.pid], grew = true, true
			}
		}
	}
	return in
}
