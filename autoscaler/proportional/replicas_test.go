package proportional

import (
	"fmt"
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// sched is a cluster whose nodes are all schedulable.
func sched(nodes, cores int) ClusterSize {
	return ClusterSize{Nodes: nodes, Cores: cores, SchedulableNodes: nodes, SchedulableCores: cores}
}

// CPA's TestScaleFromSingleParam: coresPerReplica 2, min 2, max 100; the
// nodes term is 1 (nodesPerReplica unset), so the cores term decides.
func TestLinearSingleParam(t *testing.T) {
	l := &Linear{CoresPerReplica: 2, Min: 2, Max: 100}
	for _, tc := range []struct{ cores, want int }{
		{0, 2}, {1, 2}, {2, 2}, {3, 2}, {4, 2}, {6, 3}, {10, 5}, {11, 6}, {19, 10}, {20, 10}, {21, 11}, {30, 15}, {40, 20},
	} {
		e := Explain(Params{Linear: l}, sched(1, tc.cores))
		if int(e.Replicas) != tc.want || e.Winner != TermCores || e.Nodes.Rule != RuleNoPerReplica {
			t.Errorf("cores %d: got %d (%s, nodes rule %s), want %d from cores", tc.cores, e.Replicas, e.Winner, e.Nodes.Rule, tc.want)
		}
	}
}

// CPA's TestScaleFromMultipleParams and TestScaleFromUnschedulableNodes
// (linear), and the README's example.
func TestLinear(t *testing.T) {
	multi := &Linear{CoresPerReplica: 2, NodesPerReplica: 2.5, Min: 1, Max: 100, PreventSinglePointFailure: true}
	unsched := &Linear{CoresPerReplica: 2, NodesPerReplica: 2, Min: 1, Max: 100, PreventSinglePointFailure: true, IncludeUnschedulableNodes: true}
	readme := &Linear{CoresPerReplica: 2, NodesPerReplica: 1, Min: 1, Max: 100, PreventSinglePointFailure: true, IncludeUnschedulableNodes: true}
	tests := []struct {
		name string
		l    *Linear
		size ClusterSize
		want int32
	}{
		{"multi 0/0", multi, sched(0, 0), 1},
		{"multi 1c 2n", multi, sched(2, 1), 2},
		{"multi 2c 3n", multi, sched(3, 2), 2},
		{"multi 3c 4n", multi, sched(4, 3), 2},
		{"multi 4c 4n", multi, sched(4, 4), 2},
		{"multi 6c 4n", multi, sched(4, 6), 3},
		{"multi 6c 5n", multi, sched(5, 6), 3},
		{"multi 8c 5n", multi, sched(5, 8), 4},
		{"multi 8c 15n", multi, sched(15, 8), 6},
		{"multi 8c 16n", multi, sched(16, 8), 7},
		{"multi 19c 21n", multi, sched(21, 19), 10},
		{"multi 23c 20n", multi, sched(20, 23), 12},
		{"multi 26c 38n", multi, sched(38, 26), 16},
		{"multi 30c 49n", multi, sched(49, 30), 20},
		{"multi 40c 20n", multi, sched(20, 40), 20},
		{"multi ignores unschedulable", multi, ClusterSize{Nodes: 50, Cores: 200, SchedulableNodes: 5, SchedulableCores: 8}, 4},
		{"unsched 0", unsched, sched(0, 0), 1},
		{"unsched 1", unsched, sched(1, 1), 1},
		{"unsched 2", unsched, sched(2, 2), 2},
		{"unsched 4", unsched, sched(4, 4), 2},
		{"unsched 2 of 4", unsched, ClusterSize{Nodes: 4, Cores: 4, SchedulableNodes: 2, SchedulableCores: 2}, 2},
		{"unsched 8", unsched, sched(8, 8), 4},
		{"unsched 6 of 8", unsched, ClusterSize{Nodes: 8, Cores: 8, SchedulableNodes: 6, SchedulableCores: 6}, 4},
		{"unsched max", unsched, ClusterSize{Nodes: 210, Cores: 210, SchedulableNodes: 21, SchedulableCores: 21}, 100},
		{"README: 4 nodes, 13 cores", readme, sched(4, 13), 7},
		// kube-dns' usual params: 256 cores or 16 nodes per replica.
		{"dns 100 nodes 400 cores", &Linear{CoresPerReplica: 256, NodesPerReplica: 16, PreventSinglePointFailure: true}, sched(100, 400), 7},
	}
	for _, tt := range tests {
		if got := Replicas(Params{Linear: tt.l}, tt.size); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
}

// The quirks the README documents, each with the explanation it gives.
func TestLinearQuirks(t *testing.T) {
	tests := []struct {
		name       string
		l          Linear
		size       ClusterSize
		want       int32
		winner     string
		coresRule  Rule
		nodesRule  Rule
		coresTerm  int64
		nodesTerm  int64
		saturation bool
	}{
		// 21/0.7 is 30.000000000000004 in float64: ceil gives 31, not 30.
		{name: "float64 division", l: Linear{CoresPerReplica: 0.7}, size: sched(1, 21), want: 31,
			winner: TermCores, coresRule: RuleCeil, nodesRule: RuleNoPerReplica, coresTerm: 31, nodesTerm: 1},
		// The single-point-failure rule comes after the max clamp: 2 > max 1.
		{name: "spof above max", l: Linear{NodesPerReplica: 10, Max: 1, PreventSinglePointFailure: true}, size: sched(3, 12), want: 2,
			winner: TermNodes, coresRule: RuleNoPerReplica, nodesRule: RuleSinglePointFailure, coresTerm: 1, nodesTerm: 2},
		{name: "spof needs two nodes", l: Linear{NodesPerReplica: 10, PreventSinglePointFailure: true}, size: sched(1, 64), want: 1,
			winner: TermNodes, coresRule: RuleNoPerReplica, nodesRule: RuleCeil, coresTerm: 1, nodesTerm: 1},
		// nodesPerReplica unset still gets the rule: its term of 1 becomes 2.
		{name: "spof without nodesPerReplica", l: Linear{CoresPerReplica: 256, PreventSinglePointFailure: true}, size: sched(3, 12), want: 2,
			winner: TermNodes, coresRule: RuleCeil, nodesRule: RuleSinglePointFailure, coresTerm: 1, nodesTerm: 2},
		// A zero per-replica field gives 1, not min; the other term has min.
		{name: "min skips an unset term", l: Linear{NodesPerReplica: 1, Min: 5}, size: sched(2, 8), want: 5,
			winner: TermNodes, coresRule: RuleNoPerReplica, nodesRule: RuleMin, coresTerm: 1, nodesTerm: 5},
		{name: "max clamp", l: Linear{CoresPerReplica: 1, Max: 10}, size: sched(3, 64), want: 10,
			winner: TermCores, coresRule: RuleMax, nodesRule: RuleNoPerReplica, coresTerm: 10, nodesTerm: 1},
		{name: "tie goes to nodes", l: Linear{CoresPerReplica: 4, NodesPerReplica: 1}, size: sched(4, 16), want: 4,
			winner: TermNodes, coresRule: RuleCeil, nodesRule: RuleCeil, coresTerm: 4, nodesTerm: 4},
		{name: "min 0 means 1", l: Linear{CoresPerReplica: 8}, size: sched(0, 0), want: 1,
			winner: TermNodes, coresRule: RuleMin, nodesRule: RuleNoPerReplica, coresTerm: 1, nodesTerm: 1},
		// CPA's int32 conversion would wrap 3e9 around; saturate instead.
		{name: "saturation", l: Linear{CoresPerReplica: 1e-6}, size: sched(100, 3000), want: math.MaxInt32,
			winner: TermCores, coresRule: RuleCeil, nodesRule: RuleNoPerReplica, coresTerm: 3000000000, nodesTerm: 1, saturation: true},
	}
	for _, tt := range tests {
		e := Explain(Params{Linear: &tt.l}, tt.size)
		got := []any{e.Replicas, e.Winner, e.Cores.Rule, e.Nodes.Rule, e.Cores.Replicas, e.Nodes.Replicas, e.Saturated}
		want := []any{tt.want, tt.winner, tt.coresRule, tt.nodesRule, tt.coresTerm, tt.nodesTerm, tt.saturation}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: got %v, want %v", tt.name, got, want)
				break
			}
		}
	}
}

var (
	// CPA's TestControllerScaler entries.
	steps = [][]int{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {10, 10}, {20, 20}}
	// The README's ladder.
	readmeLadder = Ladder{
		CoresToReplicas: [][]int{{1, 1}, {64, 3}, {512, 5}, {1024, 7}, {2048, 10}, {4096, 15}},
		NodesToReplicas: [][]int{{1, 1}, {2, 2}},
	}
)

func TestLadder(t *testing.T) {
	unsched := Ladder{
		NodesToReplicas: [][]int{{0, 0}, {1, 1}, {2, 2}, {3, 3}},
		CoresToReplicas: [][]int{{0, 0}, {4, 1}, {8, 2}, {12, 3}},
	}
	unschedAll := unsched
	unschedAll.IncludeUnschedulableNodes = true
	tests := []struct {
		name string
		l    Ladder
		size ClusterSize
		want int32
	}{
		{"steps 0", Ladder{NodesToReplicas: steps}, sched(0, 0), 1},
		{"steps 1", Ladder{NodesToReplicas: steps}, sched(1, 0), 1},
		{"steps 2", Ladder{NodesToReplicas: steps}, sched(2, 0), 2},
		{"steps 3", Ladder{NodesToReplicas: steps}, sched(3, 0), 3},
		{"steps 4", Ladder{NodesToReplicas: steps}, sched(4, 0), 4},
		{"steps 6", Ladder{NodesToReplicas: steps}, sched(6, 0), 4},
		{"steps 10", Ladder{NodesToReplicas: steps}, sched(10, 0), 10},
		{"steps 11", Ladder{NodesToReplicas: steps}, sched(11, 0), 10},
		{"steps 19", Ladder{NodesToReplicas: steps}, sched(19, 0), 10},
		{"steps 20", Ladder{NodesToReplicas: steps}, sched(20, 0), 20},
		{"steps 40", Ladder{NodesToReplicas: steps}, sched(40, 0), 20},
		{"from zero 0", Ladder{CoresToReplicas: [][]int{{0, 0}, {3, 3}}}, sched(0, 0), 0},
		{"from zero 2", Ladder{CoresToReplicas: [][]int{{0, 0}, {3, 3}}}, sched(0, 2), 0},
		{"from zero 4", Ladder{CoresToReplicas: [][]int{{0, 0}, {3, 3}}}, sched(0, 4), 3},
		{"from one 0", Ladder{CoresToReplicas: [][]int{{1, 0}, {3, 3}}}, sched(0, 0), 0},
		{"from one 3", Ladder{CoresToReplicas: [][]int{{1, 0}, {3, 3}}}, sched(0, 3), 3},
		{"unschedulable counted", unschedAll, ClusterSize{Nodes: 3, Cores: 12, SchedulableNodes: 2, SchedulableCores: 8}, 3},
		{"unschedulable left out", unsched, ClusterSize{Nodes: 3, Cores: 12, SchedulableNodes: 1, SchedulableCores: 4}, 1},
		{"README 100 nodes 400 cores", readmeLadder, sched(100, 400), 3},
		{"seed example", Ladder{CoresToReplicas: [][]int{{1, 1}, {3, 3}, {256, 4}, {512, 5}, {1024, 7}},
			NodesToReplicas: [][]int{{1, 1}, {2, 2}, {100, 5}, {200, 12}}}, sched(120, 400), 5},
		{"README optional feature 5 nodes", Ladder{NodesToReplicas: [][]int{{0, 0}, {6, 1}}}, sched(5, 20), 0},
		{"README optional feature 6 nodes", Ladder{NodesToReplicas: [][]int{{0, 0}, {6, 1}}}, sched(6, 24), 1},
		{"empty ladder", Ladder{}, sched(10, 40), 0},
		{"below the first step takes it", Ladder{CoresToReplicas: [][]int{{64, 3}, {128, 5}}}, sched(1, 4), 3},
		{"unsorted", Ladder{CoresToReplicas: [][]int{{65535, 100}, {2, 2}, {32768, 80}, {1, 1}}}, sched(1, 40000), 80},
		{"short row is zero-filled", Ladder{NodesToReplicas: [][]int{{1, 1}, {5}}}, sched(7, 0), 0},
	}
	for _, tt := range tests {
		if got := Replicas(Params{Ladder: &tt.l}, tt.size); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestLadderExplanation(t *testing.T) {
	l := Ladder{CoresToReplicas: [][]int{{4096, 15}, {64, 3}, {1, 1}}, NodesToReplicas: [][]int{{2, 2}}}
	e := Explain(Params{Ladder: &l}, sched(1, 100))
	if e.Replicas != 3 || e.Winner != TermCores || e.Cores.Step != 1 || e.Cores.Rule != RuleStep ||
		e.Nodes.Step != 0 || e.Nodes.Rule != RuleBelowFirstStep || e.Nodes.Replicas != 2 {
		t.Errorf("got %+v", e)
	}
	e = Explain(Params{Ladder: &Ladder{NodesToReplicas: [][]int{{1, 1}}}}, sched(4, 16))
	if e.Cores.Rule != RuleEmptyList || e.Cores.Step != -1 || e.Replicas != 1 {
		t.Errorf("empty cores list: %+v", e)
	}
	if e := Explain(Params{}, sched(4, 16)); e.Replicas != 0 || e.Mode != "" {
		t.Errorf("no params: %+v", e)
	}
}

func TestValidateParams(t *testing.T) {
	root := field.NewPath("spec", "clusterProportional")
	if errs := Validate(Params{}, root); len(errs) != 1 || errs[0].Error() != "spec.clusterProportional: Required value: exactly one of linear and ladder is required" {
		t.Errorf("neither: %v", errs)
	}
	errs := Validate(Params{Linear: &Linear{NodesPerReplica: 1}, Ladder: &Ladder{}}, root)
	if len(errs) != 1 || errs[0].Field != "spec.clusterProportional.ladder" {
		t.Errorf("both: %v", errs)
	}
	// Every problem at once, each naming its field.
	errs = ValidateLinear(Linear{CoresPerReplica: math.NaN(), NodesPerReplica: -1, Min: -2, Max: -1}, nil)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if want := "[min max coresPerReplica nodesPerReplica]"; fmt.Sprint(fields) != want {
		t.Errorf("fields %v, want %s: %v", fields, want, errs)
	}
}

func TestExplanationString(t *testing.T) {
	tests := []struct {
		p    Params
		size ClusterSize
		want string
	}{
		{Params{Linear: &Linear{CoresPerReplica: 256, NodesPerReplica: 16}}, sched(100, 400),
			"7 from nodes (linear): nodes 100: ceil(100 / 16) = 7; cores 400: ceil(400 / 256) = 2"},
		{Params{Linear: &Linear{CoresPerReplica: 0.7, Max: 20, IncludeUnschedulableNodes: true}}, sched(1, 21),
			"20 from cores (linear, unschedulable nodes included): cores 21: ceil(21 / 0.7) = 31, max 20; nodes 1: nodesPerReplica unset = 1"},
		{Params{Linear: &Linear{NodesPerReplica: 16, Min: 3, PreventSinglePointFailure: true}}, sched(2, 8),
			"3 from nodes (linear): nodes 2: ceil(2 / 16) = 1, min 3; cores 8: coresPerReplica unset = 1"},
		{Params{Linear: &Linear{NodesPerReplica: 16, PreventSinglePointFailure: true}}, sched(2, 8),
			"2 from nodes (linear): nodes 2: preventSinglePointFailure = 2; cores 8: coresPerReplica unset = 1"},
		{Params{Ladder: &readmeLadder}, sched(100, 400),
			"3 from cores (ladder): cores 400: coresToReplicas[1] = 3; nodes 100: nodesToReplicas[1] = 2"},
		{Params{Ladder: &Ladder{CoresToReplicas: [][]int{{8, 2}}}}, sched(1, 4),
			"2 from cores (ladder): cores 4: below every threshold, coresToReplicas[0] = 2; nodes 1: nodesToReplicas empty = 0"},
		{Params{}, sched(1, 4), "0: no linear or ladder params"},
	}
	for _, tt := range tests {
		if got := Explain(tt.p, tt.size).String(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}
