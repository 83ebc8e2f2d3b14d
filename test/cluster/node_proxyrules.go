package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// kube-proxy's rules are machine-wide and named alike by every kube-proxy
// (KUBE-SERVICES, KUBE-FIREWALL …), and a kube-proxy in iptables mode
// removes an nftables-mode kube-proxy's tables when it starts. So the real
// node shares them with no one: Start refuses to run while the machine has
// rules of another kube-proxy, and teardown removes the KUBE-* chains only
// when no other kube-proxy runs (then every one of them is the run's).

// kubeTables are the iptables tables kube-proxy and the kubelet write.
var kubeTables = []string{"filter", "nat", "mangle"}

// kubeProxyRules lists what kube-proxies have on the machine: every KUBE-*
// chain of iptables and ip6tables ("iptables nat KUBE-SERVICES"), and the
// nftables tables of an nftables-mode kube-proxy.
func kubeProxyRules(ctx context.Context) ([]string, error) {
	var found []string
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range kubeTables {
			chains, err := kubeChains(ctx, bin, table)
			if err != nil {
				return nil, err
			}
			for _, ch := range chains {
				found = append(found, bin+" "+table+" "+ch)
			}
		}
	}
	if _, err := exec.LookPath("nft"); err == nil {
		out, err := run(ctx, "nft", "list", "tables")
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(out) {
			if f := strings.Fields(line); len(f) == 3 && f[2] == "kube-proxy" {
				found = append(found, "nft "+strings.Join(f[1:], " "))
			}
		}
	}
	return found, nil
}

// kubeChains returns the KUBE-* chains of one table.
func kubeChains(ctx context.Context, bin, table string) ([]string, error) {
	out, err := run(ctx, bin+"-save", "-t", table)
	if err != nil {
		return nil, err
	}
	var chains []string
	for line := range strings.Lines(out) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), ":KUBE-"); ok {
			chains = append(chains, "KUBE-"+strings.Fields(name)[0])
		}
	}
	return chains, nil
}

// refuseForeignProxyRules fails, saying why, when the machine has another
// kube-proxy's rules. It runs after the sweep of an earlier run of ours, so
// whatever is left is not ours.
func refuseForeignProxyRules(ctx context.Context) error {
	found, err := kubeProxyRules(ctx)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return nil
	}
	if len(found) > 5 {
		found = append(found[:5], fmt.Sprintf("… %d in all", len(found)))
	}
	return fmt.Errorf("the machine has another kube-proxy's rules (%s): another Kubernetes node runs or ran here, "+
		"and the real node's kube-proxy would rewrite them and its teardown remove them; "+
		"stop that node and remove its rules (kube-proxy --cleanup) before running the real node",
		strings.Join(found, ", "))
}

// foreignKubeProxies returns the running kube-proxy processes that are not
// the real node's of the cluster in dir.
func foreignKubeProxies(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || filepath.Base(strings.TrimSuffix(exe, " (deleted)")) != "kube-proxy" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if dir == "" || !strings.Contains(string(cmdline), dir+"/") {
			found = append(found, "pid "+e.Name())
		}
	}
	return found
}

// removeKubeProxyRules removes the KUBE-* chains of iptables and ip6tables
// and the jumps to them from the built-in chains, unless a kube-proxy other
// than the run's (in dir) runs: then it removes nothing and says so.
func removeKubeProxyRules(ctx context.Context, dir string) error {
	if others := foreignKubeProxies(dir); len(others) > 0 {
		return fmt.Errorf("KUBE-* chains left in place: another kube-proxy runs (%s) and they are shared", strings.Join(others, ", "))
	}
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, table := range kubeTables {
			errs = append(errs, removeKubeChains(ctx, bin, table))
		}
	}
	return errors.Join(errs...)
}

// removeKubeChains removes one table's KUBE-* chains: first the jumps to
// them from the built-in chains ("-A INPUT … -j KUBE-FIREWALL", deleted as
// written), then the chains.
func removeKubeChains(ctx context.Context, bin, table string) error {
	out, err := run(ctx, bin+"-save", "-t", table)
	if err != nil {
		return err
	}
	var chains []string
	var errs []error
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, ":KUBE-"); ok {
			chains = append(chains, "KUBE-"+strings.Fields(name)[0])
			continue
		}
		if f := splitRule(line); len(f) > 2 && f[0] == "-A" && !strings.HasPrefix(f[1], "KUBE-") && strings.Contains(line, "-j KUBE-") {
			if _, err := run(ctx, bin, append([]string{"-w", "-t", table, "-D"}, f[1:]...)...); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, op := range []string{"-F", "-X"} {
		for _, ch := range chains {
			if _, err := run(ctx, bin, "-w", "-t", table, op, ch); err != nil && !noSuchChain(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// splitRule splits a rule as iptables-save writes it into arguments:
// whitespace separates them, except inside double quotes ("kubernetes
// service portals"), where a backslash escapes the next character.
func splitRule(line string) []string {
	var args []string
	var cur strings.Builder
	inQuote, escaped, started := false, false, false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case inQuote && r == '\\':
			escaped = true
		case r == '"':
			inQuote, started = !inQuote, true
		case !inQuote && (r == ' ' || r == '\t'):
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}
