package cluster

import (
	"net/netip"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestPodRange: the nodes' pod addresses are disjoint, in order, and cover
// podCIDR's host addresses after the gateway; one node keeps all of it.
func TestPodRange(t *testing.T) {
	if first, last := podRange(0, 1); first != "" || last != "" {
		t.Errorf("one node: range %q-%q, want the whole podCIDR (none)", first, last)
	}
	for n := 2; n <= maxExtraRealNodes+1; n++ {
		next := netip.MustParseAddr("10.244.0.2")
		for k := range n {
			first, last := podRange(k, n)
			f, l := netip.MustParseAddr(first), netip.MustParseAddr(last)
			if f != next || l.Less(f) {
				t.Errorf("%d nodes, node %d: %s-%s, want it to begin at %s", n, k, f, l, next)
			}
			next = l.Next()
		}
		if want := netip.MustParseAddr("10.244.0.255"); next != want {
			t.Errorf("%d nodes: the last range ends before %s, want before %s (the broadcast)", n, next, want)
		}
	}
}

func TestIsRealNode(t *testing.T) {
	for name, want := range map[string]bool{
		RealNodeName: true, extraRealNodeName(1): true, extraRealNodeName(maxExtraRealNodes): true,
		extraRealNodeName(maxExtraRealNodes + 1): false, RealNodeName + "-1": false, RealNodeName + "-x": false,
		"kwok-node-0": false, "": false,
	} {
		if got := IsRealNode(name); got != want {
			t.Errorf("IsRealNode(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestValidateExtraNodes(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{RealNode: true, ExtraRealNodes: maxExtraRealNodes}, ""},
		{Options{ExtraRealNodes: 0}, ""},
		{Options{RealNode: true, ExtraRealNodes: maxExtraRealNodes + 1}, "ExtraRealNodes is 4"},
		{Options{RealNode: true, ExtraRealNodes: -1}, "ExtraRealNodes is -1"},
		{Options{ExtraRealNodes: 1}, "needs RealNode"},
	} {
		err := tc.o.validateExtraNodes()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestExtraNodeKubelet: an extra node's kubelet has paths, a cgroup below the
// first node's, ports and a pod logs directory of its own, and its
// containerd hands out only its part of the pod range.
func TestExtraNodeKubelet(t *testing.T) {
	c := &Cluster{pki: &pki{caFile: "/ca.crt"}, nodes: planNodes("/tmp/run", 1, []int{10250, 10248, 20250, 20248})}
	nodes := c.nodes
	if len(nodes) != 2 || nodes[1].name != RealNodeName+"-2" {
		t.Fatalf("nodes %+v", nodes)
	}
	type config struct {
		CgroupRoot               string `json:"cgroupRoot"`
		Port                     int    `json:"port"`
		HealthzPort              int    `json:"healthzPort"`
		ContainerRuntimeEndpoint string `json:"containerRuntimeEndpoint"`
		PodLogsDir               string `json:"podLogsDir"`
	}
	var cfgs []config
	for _, n := range nodes {
		var cfg config
		if err := yaml.Unmarshal([]byte(c.kubeletConfig(n, "/s.crt", "/s.key")), &cfg); err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
	}
	want := []config{
		{"/" + nodeCgroup, 10250, 10248, "unix:///tmp/run/node/containerd/containerd.sock", "/tmp/run/node/pod-logs"},
		{"/" + nodeCgroup + "/" + nodes[1].name, 20250, 20248,
			"unix:///tmp/run/node/nodes/" + nodes[1].name + "/containerd/containerd.sock",
			"/tmp/run/node/nodes/" + nodes[1].name + "/pod-logs"},
	}
	for i := range want {
		if cfgs[i] != want[i] {
			t.Errorf("node %s: kubelet configuration %+v, want %+v", nodes[i].name, cfgs[i], want[i])
		}
	}
	if !strings.HasPrefix(nodes[1].paths.root, nodes[0].paths.root+"/") || nodes[1].proc(Kubelet) != Kubelet+"-"+nodes[1].name {
		t.Errorf("extra node's root %s is not below the first's %s, or its kubelet is named %s", nodes[1].paths.root, nodes[0].paths.root, nodes[1].proc(Kubelet))
	}
	for i, n := range nodes {
		var conf struct {
			Plugins []struct {
				IPAM struct {
					Ranges [][]map[string]string `json:"ranges"`
				} `json:"ipam"`
			} `json:"plugins"`
		}
		b, err := n.paths.cniConfig()
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &conf); err != nil {
			t.Fatal(err)
		}
		r := conf.Plugins[0].IPAM.Ranges[0][0]
		first, last := podRange(i, 2)
		if r["rangeStart"] != first || r["rangeEnd"] != last || r["subnet"] != podCIDR {
			t.Errorf("node %s: IPAM range %v, want %s-%s of %s", n.name, r, first, last, podCIDR)
		}
	}
}
