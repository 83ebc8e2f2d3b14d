package realnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// testRunningPodsLocked checks, on the chart's running pods (ebbflow-adapter
// and ebbflow-autoscaler), what users get rather than what the chart asks
// for: for each container's process, /proc/<pid>/status (every uid, gid and
// supplementary group non-root, no capability in any set, no_new_privs, a seccomp filter), its
// root mount read-only (/proc/<pid>/mountinfo, and a write into it refused
// with EROFS), and the OCI spec the kubelet had containerd make (`ctr
// containers info`: root.readonly, a non-root user, no capabilities,
// noNewPrivileges, a seccomp profile).
func testRunningPodsLocked(ctx context.Context, t *testing.T) {
	n := 0
	for _, app := range []struct{ name, container string }{{adapterDepl, "adapter"}, {scalerDepl, "autoscaler"}} {
		pods := podsOf(ctx, t, chartNS, "app.kubernetes.io/name="+app.name)
		if len(pods) == 0 {
			t.Errorf("no pod of %s", app.name)
		}
		for _, p := range livePods(pods) {
			c := runningContainer(ctx, t, p, app.container)
			errs := append(processLocked(c.pid), specLocked(ctx, c.id)...)
			for _, err := range errs {
				t.Errorf("%v: %v", c, err)
			}
			if len(errs) == 0 {
				n++
			}
		}
	}
	t.Logf("%d running containers non-root, without capabilities, no_new_privs, seccomp'd, read-only (process and OCI spec)", n)
	if n < 4 {
		t.Errorf("%d containers passed, want the release's 4 (2 adapter, 2 autoscaler)", n)
	}
}

// processLocked reads what the kernel holds of a process: its credentials,
// capability sets, no_new_privs and seccomp mode, and its root mount.
func processLocked(pid int) []error {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return []error{err}
	}
	var errs []error
	fields := map[string]string{}
	for line := range strings.Lines(string(status)) {
		k, v, _ := strings.Cut(line, ":")
		fields[k] = strings.TrimSpace(v)
	}
	for _, k := range []string{"Uid", "Gid", "Groups"} {
		for _, id := range strings.Fields(fields[k]) {
			if id == "0" {
				errs = append(errs, fmt.Errorf("%s %q: root", k, fields[k]))
				break
			}
		}
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if strings.Trim(fields[k], "0") != "" {
			errs = append(errs, fmt.Errorf("%s %q, want no capability", k, fields[k]))
		}
	}
	if fields["NoNewPrivs"] != "1" {
		errs = append(errs, fmt.Errorf("NoNewPrivs %q, want 1", fields["NoNewPrivs"]))
	}
	if fields["Seccomp"] != "2" {
		errs = append(errs, fmt.Errorf("Seccomp %q, want 2 (filter)", fields["Seccomp"]))
	}
	if err := rootReadOnly(pid); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// rootReadOnly checks the process's root mount: read-only in its
// mountinfo, and a file cannot be created in it.
func rootReadOnly(pid int) error {
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return err
	}
	var opts string
	for line := range strings.Lines(string(info)) {
		if f := strings.Fields(line); len(f) > 5 && f[4] == "/" {
			opts = f[5] // the last mount on / is the one the process sees
		}
	}
	if !strings.Contains(","+opts+",", ",ro,") {
		return fmt.Errorf("root mounted %q, want ro", opts)
	}
	probe := filepath.Join(fmt.Sprintf("/proc/%d/root", pid), "ebbflow-readonly-probe")
	f, err := os.OpenFile(probe, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err == nil {
		f.Close()
		_ = os.Remove(probe)
		return errors.New("created a file in the container's root")
	}
	if !errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("create a file in the root: %w, want EROFS", err)
	}
	return nil
}

// ociSpec is the part of a container's OCI runtime spec read here.
type ociSpec struct {
	Process struct {
		User struct {
			UID            uint32   `json:"uid"`
			GID            uint32   `json:"gid"`
			AdditionalGids []uint32 `json:"additionalGids"`
		} `json:"user"`
		Capabilities    map[string][]string `json:"capabilities"`
		NoNewPrivileges bool                `json:"noNewPrivileges"`
	} `json:"process"`
	Root struct {
		Readonly bool `json:"readonly"`
	} `json:"root"`
	Linux struct {
		Seccomp *struct {
			DefaultAction string `json:"defaultAction"`
		} `json:"seccomp"`
	} `json:"linux"`
}

// specLocked reads the OCI spec containerd holds for the container, the
// one the kubelet asked for through the CRI.
func specLocked(ctx context.Context, id string) []error {
	out, err := env.C.Ctr(ctx, "containers", "info", id)
	if err != nil {
		return []error{err}
	}
	var info struct {
		Spec *ociSpec `json:"Spec"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.Spec == nil {
		return []error{fmt.Errorf("ctr containers info %s: no OCI spec (%v):\n%.400s", id, err, out)}
	}
	s := info.Spec
	var errs []error
	if !s.Root.Readonly {
		errs = append(errs, errors.New("OCI spec: root.readonly false"))
	}
	if s.Process.User.UID == 0 || s.Process.User.GID == 0 {
		errs = append(errs, fmt.Errorf("OCI spec: user %d:%d", s.Process.User.UID, s.Process.User.GID))
	}
	for set, caps := range s.Process.Capabilities {
		if len(caps) > 0 {
			errs = append(errs, fmt.Errorf("OCI spec: %s capabilities %v", set, caps))
		}
	}
	if !s.Process.NoNewPrivileges {
		errs = append(errs, errors.New("OCI spec: noNewPrivileges false"))
	}
	if s.Linux.Seccomp == nil || s.Linux.Seccomp.DefaultAction == "SCMP_ACT_ALLOW" {
		errs = append(errs, fmt.Errorf("OCI spec: seccomp %+v, want a RuntimeDefault profile", s.Linux.Seccomp))
	}
	return errs
}
