package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// kernelSetting is a machine-wide kernel setting (sysctl) that a real node
// changes while it runs.
type kernelSetting struct {
	name string // dotted, as sysctl(8) writes it: "net.ipv4.ip_forward"
	run  string // the value while the node runs
	why  string
}

// nodeKernelSettings are every kernel setting the real node changes. The run
// records their values before it starts (in the owner record, so the sweep
// of a killed run restores them too) and puts each back at teardown unless
// something else changed it meanwhile. The kubelet changes none: it runs
// with protectKernelDefaults in a view of its own (node_kernelview.go).
// TestRealNode compares all of /proc/sys before, during and after a run,
// which finds a setting changed that is not listed here.
var nodeKernelSettings = []kernelSetting{
	{"net.ipv4.ip_forward", "1", "the CNI bridge plugin (isGateway) routes the pod network"},
}

// sysctlPath is the /proc/sys file of a dotted setting name.
func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func readSysctl(name string) (string, error) {
	b, err := os.ReadFile(sysctlPath(name))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func writeSysctl(name, value string) error {
	if err := os.WriteFile(sysctlPath(name), []byte(value+"\n"), 0o644); err != nil {
		return fmt.Errorf("set %s=%s: %w", name, value, err)
	}
	return nil
}

// readKernelSettings returns the machine's current value of every setting
// the node changes.
func readKernelSettings() (map[string]string, error) {
	vals := map[string]string{}
	for _, s := range nodeKernelSettings {
		v, err := readSysctl(s.name)
		if err != nil {
			return nil, err
		}
		vals[s.name] = v
	}
	return vals, nil
}

// restoreKernelSettings puts back the values recorded before the run. A
// setting that no longer has the run's value was changed by someone else
// since, and is left as it is: the run restores only its own changes.
func restoreKernelSettings(before map[string]string, logf func(string, ...any)) error {
	var errs []error
	for _, s := range nodeKernelSettings {
		old, ok := before[s.name]
		if !ok || old == s.run {
			continue
		}
		now, err := readSysctl(s.name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if now != s.run {
			if now != old {
				logf("%s is %s, neither the run's %s nor the %s before it: changed by someone else, left as it is", s.name, now, s.run, old)
			}
			continue
		}
		errs = append(errs, writeSysctl(s.name, old))
	}
	return errors.Join(errs...)
}
