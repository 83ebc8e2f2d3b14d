package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// The real node's network. One real node runs on a machine at a time (see
// nodeLock), so the names and ranges are fixed; Start refuses to run when the
// machine already routes them.
const (
	// nodeBridge is the Linux bridge of the pod network, created before
	// containerd so that the CNI bridge plugin reuses it.
	nodeBridge = "ebbflow0"
	// podCIDR is the pod network; podGateway, the bridge's address, is also
	// where kube-apiserver, the kubelet and Prometheus listen for pods.
	podCIDR    = "10.244.0.0/24"
	podGateway = "10.244.0.1"
	// serviceCIDR is kube-apiserver's --service-cluster-ip-range.
	serviceCIDR = "10.96.0.0/16"
	// kubernetesServiceIP is the ClusterIP of the default/kubernetes Service.
	kubernetesServiceIP = "10.96.0.1"
)

// The guard's chains. Each holds all the guard's rules of one hook, so
// teardown deletes a jump and a chain and nothing else of the machine's.
const (
	guardForward     = "EBBFLOW-GUARD-FWD"  // filter FORWARD
	guardOutput      = "EBBFLOW-GUARD-OUT"  // filter OUTPUT
	guardPostrouting = "EBBFLOW-GUARD-POST" // mangle POSTROUTING
	guardForward6    = "EBBFLOW-GUARD-FWD6" // ip6tables filter FORWARD
)

// guardRule is one iptables rule of the guard, in its chain.
type guardRule struct {
	bin, table, chain, hook string
	spec                    []string
}

// guardRules keep every packet of the run on the machine:
//   - forwarded traffic from the pod network may only go back into it;
//   - a host-originated packet to the Service range that kube-proxy did not
//     translate (no rules yet, or none for that Service) is rejected;
//   - nothing to the Service range, from the pod network or from the bridge's
//     address leaves by any interface but the bridge and loopback (the
//     backstop, in mangle, which kube-proxy never touches), nor anything
//     sent to a Service address and translated by kube-proxy to an endpoint
//     off the machine (a Service whose endpoints lie outside the pod
//     network: after the translation its packets are none of the above);
//   - no IPv6 is forwarded to or from the bridge.
func guardRules() []guardRule {
	fwd := func(spec ...string) guardRule { return guardRule{"iptables", "filter", guardForward, "FORWARD", spec} }
	out := func(spec ...string) guardRule { return guardRule{"iptables", "filter", guardOutput, "OUTPUT", spec} }
	post := func(spec ...string) guardRule {
		return guardRule{"iptables", "mangle", guardPostrouting, "POSTROUTING", spec}
	}
	fwd6 := func(spec ...string) guardRule {
		return guardRule{"ip6tables", "filter", guardForward6, "FORWARD", spec}
	}
	return []guardRule{
		fwd("-s", podCIDR, "-d", podCIDR, "-j", "RETURN"),
		fwd("-s", podCIDR, "-j", "DROP"),
		fwd("-i", nodeBridge, "-j", "DROP"),
		fwd("-d", serviceCIDR, "-j", "DROP"),
		out("-d", serviceCIDR, "-j", "REJECT"),
		post("-d", serviceCIDR, "-j", "DROP"),
		post("-o", nodeBridge, "-j", "RETURN"),
		post("-o", "lo", "-j", "RETURN"),
		post("-m", "conntrack", "--ctstate", "DNAT", "--ctorigdst", serviceCIDR, "-j", "DROP"),
		post("-s", podCIDR, "-j", "DROP"),
		post("-s", podGateway, "-j", "DROP"),
		fwd6("-i", nodeBridge, "-j", "DROP"),
		fwd6("-o", nodeBridge, "-j", "DROP"),
	}
}

// run runs a host command and returns its combined output; the error carries
// the output.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), sbinPath())
	return output(cmd)
}

// output runs cmd and returns its combined output; the error names the
// command and carries the output.
func output(cmd *exec.Cmd) (string, error) {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// checkNetworkFree fails when the machine already has the bridge or routes a
// range of the node's, which a run must never take over.
func checkNetworkFree(ctx context.Context) error {
	out, err := run(ctx, "ip", "-4", "route", "show", "table", "all")
	if err != nil {
		return err
	}
	for _, r := range []string{podCIDR, serviceCIDR} {
		_, want, _ := net.ParseCIDR(r)
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) == 0 || strings.Contains(line, "dev "+nodeBridge) {
				continue
			}
			if _, have, err := net.ParseCIDR(f[0]); err == nil && have.Contains(want.IP) && !have.IP.Equal(net.IPv4zero) {
				return fmt.Errorf("the machine already routes %s (%q); the real node needs that range", r, strings.TrimSpace(line))
			}
		}
	}
	return nil
}

// installGuard creates the bridge and the guard, before any component runs.
func installGuard(ctx context.Context) error {
	if err := checkNetworkFree(ctx); err != nil {
		return err
	}
	prefix := strings.Split(podCIDR, "/")[1]
	for _, args := range [][]string{
		{"link", "add", nodeBridge, "type", "bridge"},
		{"addr", "add", podGateway + "/" + prefix, "dev", nodeBridge},
		{"link", "set", nodeBridge, "up"},
	} {
		if _, err := run(ctx, "ip", args...); err != nil {
			return err
		}
	}
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+nodeBridge+"/disable_ipv6", []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("disable IPv6 on %s: %w", nodeBridge, err)
	}
	for _, r := range guardRules() {
		if _, err := run(ctx, r.bin, "-w", "-t", r.table, "-N", r.chain); err != nil && !strings.Contains(err.Error(), "exists") {
			return err
		}
		if _, err := run(ctx, r.bin, append([]string{"-w", "-t", r.table, "-A", r.chain}, r.spec...)...); err != nil {
			return err
		}
	}
	return reassertGuard(ctx)
}

// guardHooks are the (binary, table, hook, chain) jumps of the guard.
func guardHooks() [][4]string {
	seen := map[string]bool{}
	var hooks [][4]string
	for _, r := range guardRules() {
		if !seen[r.chain] {
			seen[r.chain] = true
			hooks = append(hooks, [4]string{r.bin, r.table, r.hook, r.chain})
		}
	}
	return hooks
}

// reassertGuard puts the guard's jumps first in their hooks. kube-proxy
// prepends its own jumps when it starts; they accept nothing new, but the
// guard goes first anyway.
func reassertGuard(ctx context.Context) error {
	for _, h := range guardHooks() {
		deleteJumps(ctx, h)
		if _, err := run(ctx, h[0], "-w", "-t", h[1], "-I", h[2], "1", "-j", h[3]); err != nil {
			return err
		}
	}
	return nil
}

// deleteJumps removes every jump from hook h to its guard chain.
func deleteJumps(ctx context.Context, h [4]string) {
	for range 10 {
		if _, err := run(ctx, h[0], "-w", "-t", h[1], "-D", h[2], "-j", h[3]); err != nil {
			return
		}
	}
}

// removeGuard deletes the guard's jumps and chains and the bridge. It is safe
// to call when some or all of them do not exist; it returns what it could not
// remove.
func removeGuard(ctx context.Context) error {
	var errs []error
	for _, h := range guardHooks() {
		deleteJumps(ctx, h)
		if _, err := run(ctx, h[0], "-w", "-t", h[1], "-F", h[3]); err != nil && !noSuchChain(err) {
			errs = append(errs, err)
			continue
		}
		if _, err := run(ctx, h[0], "-w", "-t", h[1], "-X", h[3]); err != nil && !noSuchChain(err) {
			errs = append(errs, err)
		}
	}
	if _, err := run(ctx, "ip", "link", "show", nodeBridge); err == nil {
		if _, err := run(ctx, "ip", "link", "delete", nodeBridge); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func noSuchChain(err error) bool {
	s := err.Error()
	return strings.Contains(s, "No chain") || strings.Contains(s, "does not exist") || strings.Contains(s, "not found")
}

// GuardCounts returns the packets each DROP or REJECT rule of the guard has
// caught, keyed "chain: rule". Tests read it to prove the guard held.
func GuardCounts(ctx context.Context) (map[string]int64, error) {
	counts := map[string]int64{}
	for _, h := range guardHooks() {
		out, err := run(ctx, h[0], "-w", "-t", h[1], "-L", h[3], "-n", "-v", "-x")
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) < 3 || (f[2] != "DROP" && f[2] != "REJECT") {
				continue
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				continue
			}
			counts[h[3]+": "+strings.Join(f[2:], " ")] += n
		}
	}
	return counts, nil
}
