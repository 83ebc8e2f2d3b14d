package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestGuardHoldsBeforeAnythingStarts installs the guard alone — the state of
// a real-node run before any component has started — and sends what must not
// leave the machine: a host connection to an untranslated Service address,
// and connections from an address of the pod network (in a network namespace
// of the test's, wired to the bridge as the CNI plugin wires a pod) to an
// address off the machine (TEST-NET-2, by the default route) and to a Service
// address. Each must fail and be counted by a guard rule; after removeGuard
// nothing of it is left.
func TestGuardHoldsBeforeAnythingStarts(t *testing.T) {
	lock := lockCleanMachine(t) // may wait for another run: before the test's own bound
	t.Cleanup(lock.release)     // last: after the guard is gone; the record is the test's own
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := removeGuard(ctx); err != nil {
		t.Fatal(err)
	}
	if err := installGuard(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := removeGuard(context.Background()); err != nil {
			t.Errorf("remove guard: %v", err)
		}
		assertNoGuardLeft(t)
	})

	// From the host: nothing listens or translates, so the only answer is
	// the guard's REJECT (a packet by the default route would time out).
	d := net.Dialer{Timeout: 3 * time.Second}
	if conn, err := d.DialContext(ctx, "tcp", "10.96.200.7:443"); err == nil {
		conn.Close()
		t.Fatal("dialled an untranslated Service address from the host")
	} else if !strings.Contains(err.Error(), "refused") {
		t.Errorf("host to Service range: want connection refused by the guard's REJECT, got %v", err)
	}

	// From the host, with the bridge's address as source (what kube-apiserver
	// and the kubelet listen on): dropped on the way out, so it times out.
	bound := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(podGateway)}}
	if conn, err := bound.DialContext(ctx, "tcp", "198.51.100.7:80"); err == nil {
		conn.Close()
		t.Fatal("a connection from the bridge's address left the machine")
	}

	// As in a run, where the CNI bridge plugin turns forwarding on.
	owner, err := recordNodeOwner(t.TempDir(), "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = writeSysctl("net.ipv4.ip_forward", owner.kernel["net.ipv4.ip_forward"]) })
	if err := os.WriteFile(ipForwardPath, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := podNetns(ctx, t, "10.244.0.250")
	for _, target := range []string{"198.51.100.7:80", "10.96.200.7:443"} {
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "timeout", "2",
			"bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", strings.Split(target, ":")[0], strings.Split(target, ":")[1]))
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Errorf("pod network reached %s: %s", target, out)
		}
	}
	counts, err := GuardCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out, fwd, post int64
	for rule, n := range counts {
		switch {
		case strings.HasPrefix(rule, guardOutput+":"):
			out += n
		case strings.HasPrefix(rule, guardForward+":"):
			fwd += n
		case strings.HasPrefix(rule, guardPostrouting+":"):
			post += n
		}
	}
	if out == 0 || fwd == 0 || post == 0 {
		t.Errorf("guard counted host→Service %d, pod→outside %d, bridge address→outside %d packets; want all > 0 (counts %v)", out, fwd, post, counts)
	}
}

// podNetns creates a network namespace with addr in the pod network, wired to
// the bridge through a veth pair, default route by the gateway; removed at
// cleanup.
func podNetns(ctx context.Context, t *testing.T, addr string) string {
	t.Helper()
	const ns, host, peer = "ebbflow-guard-test", "ebfgt0", "ebfgt1"
	_, _ = run(ctx, "ip", "netns", "delete", ns)
	t.Cleanup(func() {
		_, _ = run(context.Background(), "ip", "netns", "delete", ns)
		_, _ = run(context.Background(), "ip", "link", "delete", host)
	})
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", host, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", ns},
		{"link", "set", host, "master", nodeBridge},
		{"link", "set", host, "up"},
		{"-n", ns, "addr", "add", addr + "/24", "dev", peer},
		{"-n", ns, "link", "set", peer, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "route", "add", "default", "via", podGateway},
	} {
		if _, err := run(ctx, "ip", args...); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// assertNoGuardLeft fails the test if a guard chain, a jump to one or the
// bridge is still on the machine.
func assertNoGuardLeft(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, bin := range []string{"iptables-save", "ip6tables-save"} {
		out, err := run(ctx, bin)
		if err != nil {
			t.Error(err)
			continue
		}
		if strings.Contains(out, "EBBFLOW-GUARD") {
			t.Errorf("%s still shows the guard:\n%s", bin, grepLines(out, "EBBFLOW-GUARD"))
		}
	}
	if _, err := run(ctx, "ip", "link", "show", nodeBridge); err == nil {
		t.Errorf("bridge %s still exists", nodeBridge)
	}
}

func grepLines(s, sub string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			b.WriteString(line)
		}
	}
	return b.String()
}
