package cluster

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// More real nodes (Options.ExtraRealNodes): each is one more kubelet with a
// containerd of its own on the same machine, as kind runs several nodes on
// one host. They share the first node's pod network (the bridge, the guard,
// podCIDR: each containerd gives its pods a disjoint part of the range),
// kube-proxy (one per machine: every node's pods live in the host's network
// namespace), kube-scheduler and the cluster DNS; each reports the machine's
// CPUs and memory as its capacity, so two nodes schedule twice the requests
// the machine has (the Kubernetes HPA e2e specs that scale to 5 pods of
// 500 m need more than one node of 2 CPUs: docs/k8s-e2e.md). Everything of
// an extra node lives under the first node's root and cgroup, so the sweep,
// the watchdog and make clean-node cover it unchanged.
const maxExtraRealNodes = 3

// realNode is one kubelet of the run with its containerd.
type realNode struct {
	name                     string // the Node's name
	paths                    nodePaths
	cgroup                   string // the kubelet's cgroupRoot, in every hierarchy
	kubeletPort, healthzPort int
}

// extraRealNodeName is the name of the k-th extra node (from 1): the first
// node's name and k+1.
func extraRealNodeName(k int) string { return RealNodeName + "-" + strconv.Itoa(k+1) }

// IsRealNode reports whether a Node of this name is one of the run's real
// nodes (the first or an extra one).
func IsRealNode(name string) bool {
	if name == RealNodeName {
		return true
	}
	k, ok := strings.CutPrefix(name, RealNodeName+"-")
	n, err := strconv.Atoi(k)
	return ok && err == nil && n >= 2 && n <= maxExtraRealNodes+1
}

// RealNodePod returns whether pod runs on one of the run's real nodes.
func RealNodePod(pod *corev1.Pod) bool { return IsRealNode(pod.Spec.NodeName) }

// proc is the name of the node's process of component (its log is
// <dir>/<proc>.log): the component's own for the first node.
func (n realNode) proc(component string) string {
	if n.name == RealNodeName {
		return component
	}
	return component + "-" + n.name
}

// podRange returns the first and last pod address the k-th of n nodes
// (from 0) hands out, an equal part of podCIDR's host addresses after the
// gateway; with one node both are empty (the whole range).
func podRange(k, n int) (first, last string) {
	if n <= 1 {
		return "", ""
	}
	prefix := netip.MustParsePrefix(podCIDR).Masked()
	hosts := 1<<(prefix.Addr().BitLen()-prefix.Bits()) - 3 // without the network, the gateway and broadcast
	size := hosts / n
	start := 2 + k*size
	end := start + size - 1
	if k == n-1 {
		end = hosts + 1
	}
	at := func(i int) string {
		b := prefix.Addr().As4()
		binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(i))
		return netip.AddrFrom4(b).String()
	}
	return at(start), at(end)
}

// planNodes lays out the run's real nodes in dir: the first at the node
// root with cgroup nodeCgroup, then extra ones below its root and cgroup;
// each on two of ports (the kubelet's, its health endpoint's) and with its
// part of the pod range.
func planNodes(dir string, extra int, ports []int) []realNode {
	first := newNodePaths(dir)
	nodes := make([]realNode, 0, 1+extra)
	for k := 0; k <= extra; k++ {
		n := realNode{name: RealNodeName, paths: first, cgroup: nodeCgroup,
			kubeletPort: ports[2*k], healthzPort: ports[2*k+1]}
		if k > 0 {
			n.name = extraRealNodeName(k)
			n.paths = newNodePathsAt(filepath.Join(first.root, "nodes", n.name))
			n.cgroup = nodeCgroup + "/" + n.name
		}
		n.paths.rangeStart, n.paths.rangeEnd = podRange(k, extra+1)
		nodes = append(nodes, n)
	}
	return nodes
}

// validateExtraNodes checks Options.ExtraRealNodes.
func (o Options) validateExtraNodes() error {
	switch {
	case o.ExtraRealNodes < 0 || o.ExtraRealNodes > maxExtraRealNodes:
		return fmt.Errorf("cluster: Options.ExtraRealNodes is %d, want 0 to %d", o.ExtraRealNodes, maxExtraRealNodes)
	case o.ExtraRealNodes > 0 && !o.RealNode:
		return fmt.Errorf("cluster: Options.ExtraRealNodes needs RealNode")
	}
	return nil
}
