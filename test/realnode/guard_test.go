package realnode

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ebbflow/ebbflow/test/cluster"
)

// Addresses off the machine the guard test aims at: TEST-NET-2
// (documentation, RFC 5737), reached only by the default route. Nothing
// answers there; the guard must stop the packets before they leave.
const (
	offMachineAddr     = "198.51.100.7"
	offMachineResolver = "198.51.100.53"
	// untranslatedSvc is an address of the Service range no Service has.
	untranslatedSvc = "10.96.200.7"
)

// testGuardOnRunningNode checks test/cluster's egress guard on the running
// node, after kube-proxy inserted its rules: its jumps are first in their
// hooks, before kube-proxy's; what must not leave is refused or dropped,
// and counted by a guard rule — from a running pod's network namespace, a
// connection to an address off the machine and a DNS query to a resolver
// off the machine; from the host, a connection to a Service address
// kube-proxy has no rule for; from both, a connection to a Service whose
// endpoint lies off the machine. And pods resolve names only on the
// machine: every running pod's resolv.conf names only resolvers on its own
// loopback.
func testGuardOnRunningNode(ctx context.Context, t *testing.T) {
	checkGuardFirst(ctx, t)
	// A pod of an earlier rollout (the upgrade before) may still be
	// terminating, its container already stopped: take a live one.
	live := livePods(podsOf(ctx, t, chartNS, "app.kubernetes.io/name="+adapterDepl))
	if len(live) == 0 {
		t.Fatal("no adapter pod that is not being deleted")
	}
	c := runningContainer(ctx, t, live[0], "adapter")
	netns := fmt.Sprintf("--net=/proc/%d/ns/net", c.pid)

	guardCounted(ctx, t, "EBBFLOW-GUARD-FWD", "a TCP connection from the pod "+c.pod+" to "+offMachineAddr+":80", func() error {
		out, err := exec.CommandContext(ctx, "nsenter", netns, "timeout", "2", "bash", "-c", "exec 3<>/dev/tcp/"+offMachineAddr+"/80").CombinedOutput()
		if err == nil {
			return fmt.Errorf("connected: %s", out)
		}
		return nil
	})
	guardCounted(ctx, t, "EBBFLOW-GUARD-FWD", "a DNS query from the pod "+c.pod+" to "+offMachineResolver+":53", func() error {
		// A UDP send succeeds locally whatever becomes of the datagram.
		out, err := exec.CommandContext(ctx, "nsenter", netns, "timeout", "2", "bash", "-c",
			"exec 3<>/dev/udp/"+offMachineResolver+"/53 && printf 'ebbflow-guard-probe' >&3").CombinedOutput()
		if err != nil {
			return fmt.Errorf("send: %v: %s", err, out)
		}
		return nil
	})
	guardCounted(ctx, t, "EBBFLOW-GUARD-OUT", "a host connection to the untranslated Service address "+untranslatedSvc+":443", func() error {
		d := net.Dialer{Timeout: 3 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", untranslatedSvc+":443")
		if err == nil {
			conn.Close()
			return fmt.Errorf("connected")
		}
		if !strings.Contains(err.Error(), "refused") {
			return fmt.Errorf("%v, want connection refused by the guard's REJECT", err)
		}
		return nil
	})
	checkOutsideService(ctx, t, netns)
	checkPodResolvers(ctx, t)
}

// outsideService is a Service without a selector whose one endpoint lies
// off the machine: kube-proxy translates its ClusterIP to offMachineAddr.
const outsideService = `apiVersion: v1
kind: Service
metadata: {name: guard-outside, namespace: ` + appNS + `}
spec:
  ports: [{port: 80, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: guard-outside
  namespace: ` + appNS + `
  labels: {kubernetes.io/service-name: guard-outside}
addressType: IPv4
endpoints: [{addresses: [` + offMachineAddr + `]}]
ports: [{port: 80, protocol: TCP}]
`

// checkOutsideService creates outsideService and, once kube-proxy has its
// rules, connects to its ClusterIP from the host and from the pod's network
// namespace: kube-proxy translates the address to one off the machine, the
// guard must drop both and count them.
func checkOutsideService(ctx context.Context, t *testing.T, netns string) {
	t.Helper()
	kubectl(ctx, t, outsideService, "apply", "-f", "-")
	defer kubectl(ctx, t, outsideService, "delete", "-f", "-", "--wait=false")
	ip := serviceIP(ctx, t, "guard-outside")
	// kube-proxy's DNAT to the endpoint.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := exec.CommandContext(ctx, "iptables", "-w", "-t", "nat", "-S").CombinedOutput()
		return err == nil && strings.Contains(string(out), "--to-destination "+offMachineAddr+":80"), nil
	})
	if err != nil {
		t.Fatalf("kube-proxy wrote no rule for the Service guard-outside (%s → %s) within 30 s", ip, offMachineAddr)
	}
	guardCounted(ctx, t, "EBBFLOW-GUARD-POST", "a host connection to the Service "+ip+":80 whose endpoint is "+offMachineAddr, func() error {
		d := net.Dialer{Timeout: 2 * time.Second}
		if conn, err := d.DialContext(ctx, "tcp", ip+":80"); err == nil {
			conn.Close()
			return fmt.Errorf("connected")
		}
		return nil
	})
	guardCounted(ctx, t, "EBBFLOW-GUARD-FWD", "a pod's connection to the Service "+ip+":80 whose endpoint is "+offMachineAddr, func() error {
		out, err := exec.CommandContext(ctx, "nsenter", netns, "timeout", "2", "bash", "-c", "exec 3<>/dev/tcp/"+ip+"/80").CombinedOutput()
		if err == nil {
			return fmt.Errorf("connected: %s", out)
		}
		return nil
	})
}

// checkGuardFirst: kube-proxy's jumps are in the hooks (its rules are in
// place), and each guard jump is still the first rule of its hook.
func checkGuardFirst(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, h := range []struct{ bin, table, hook, chain string }{
		{"iptables", "filter", "FORWARD", "EBBFLOW-GUARD-FWD"},
		{"iptables", "filter", "OUTPUT", "EBBFLOW-GUARD-OUT"},
		{"iptables", "mangle", "POSTROUTING", "EBBFLOW-GUARD-POST"},
		{"ip6tables", "filter", "FORWARD", "EBBFLOW-GUARD-FWD6"},
	} {
		out, err := exec.CommandContext(ctx, h.bin, "-w", "-t", h.table, "-S", h.hook).CombinedOutput()
		if err != nil {
			t.Fatalf("%s -t %s -S %s: %v: %s", h.bin, h.table, h.hook, err, out)
		}
		var rules []string
		for line := range strings.Lines(string(out)) {
			if strings.HasPrefix(line, "-A ") {
				rules = append(rules, strings.TrimSpace(line))
			}
		}
		if len(rules) == 0 || rules[0] != "-A "+h.hook+" -j "+h.chain {
			t.Errorf("%s %s %s: first rule %q, want the jump to %s:\n%s", h.bin, h.table, h.hook, first(rules), h.chain, out)
		}
	}
	// kube-proxy's: nat OUTPUT and PREROUTING to KUBE-SERVICES, filter
	// FORWARD and OUTPUT too.
	for _, h := range [][3]string{{"nat", "OUTPUT", "KUBE-SERVICES"}, {"nat", "PREROUTING", "KUBE-SERVICES"}, {"filter", "FORWARD", "KUBE-"}, {"filter", "OUTPUT", "KUBE-"}} {
		out, err := exec.CommandContext(ctx, "iptables", "-w", "-t", h[0], "-S", h[1]).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "-j "+h[2]) {
			t.Errorf("iptables -t %s %s: no jump to %s of kube-proxy's (%v):\n%s", h[0], h[1], h[2], err, out)
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// guardCounted runs send, which fails when the packet got through, and
// checks that the guard chain's DROP and REJECT rules counted it.
func guardCounted(ctx context.Context, t *testing.T, chain, what string, send func() error) {
	t.Helper()
	before := chainCount(ctx, t, chain)
	if err := send(); err != nil {
		t.Errorf("%s: %v", what, err)
	}
	if after := chainCount(ctx, t, chain); after <= before {
		t.Errorf("%s: %s counted no packet (%d before, %d after)", what, chain, before, after)
	} else {
		t.Logf("%s: stopped, %d packets counted by %s", what, after-before, chain)
	}
}

// chainCount is the packets the DROP and REJECT rules of a guard chain
// caught so far.
func chainCount(ctx context.Context, t *testing.T, chain string) int64 {
	t.Helper()
	counts, err := cluster.GuardCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for rule, c := range counts {
		if strings.HasPrefix(rule, chain+": ") {
			n += c
		}
	}
	return n
}

// checkPodResolvers reads /etc/resolv.conf as each running container on the
// real node sees it: every nameserver must be a loopback address, inside the
// pod's own network namespace, so a name lookup never asks a resolver off
// the machine.
func checkPodResolvers(ctx context.Context, t *testing.T) {
	t.Helper()
	list, err := env.C.Client().CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + cluster.RealNodeName})
	if err != nil {
		t.Fatal(err)
	}
	n, bad := 0, 0
	for _, p := range livePods(list.Items) {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running == nil {
				continue
			}
			c := runningContainer(ctx, t, p, s.Name)
			conf, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/etc/resolv.conf", c.pid))
			if err != nil {
				t.Errorf("%v: %v", c, err)
				bad++
				continue
			}
			var servers []string
			for line := range strings.Lines(string(conf)) {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" {
					servers = append(servers, f[1])
					if ip := net.ParseIP(f[1]); ip == nil || !ip.IsLoopback() {
						t.Errorf("%v: resolv.conf names the resolver %s, off the pod's loopback:\n%s", c, f[1], conf)
						bad++
					}
				}
			}
			if len(servers) == 0 {
				t.Errorf("%v: resolv.conf names no resolver (glibc and Go then ask 127.0.0.1, but the kubelet should say so):\n%s", c, conf)
				bad++
			}
			n++
		}
	}
	if n < 4 {
		t.Errorf("read the resolv.conf of %d running containers, want at least the release's 4", n)
	}
	if bad == 0 {
		t.Logf("resolv.conf of %d running containers on the node: loopback resolvers only", n)
	}
}
