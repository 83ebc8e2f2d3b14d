package proportional

import (
	"math"
)

// Rule says what decided a term's replicas.
type Rule string

// Rules of the linear mode, in the order CPA applies them.
const (
	// RuleNoPerReplica: the per-replica field is 0; the term is 1 (min is not applied).
	RuleNoPerReplica Rule = "NoPerReplica"
	// RuleCeil: ceil(count / perReplica), within [min, max].
	RuleCeil Rule = "Ceil"
	// RuleMax: ceil(count / perReplica) was above max and was lowered to it.
	RuleMax Rule = "Max"
	// RuleMin: the term was below min and was raised to it.
	RuleMin Rule = "Min"
	// RuleSinglePointFailure: preventSinglePointFailure raised the nodes
	// term to 2 (there is more than one node); this can exceed max.
	RuleSinglePointFailure Rule = "SinglePointFailure"
)

// Rules of the ladder mode.
const (
	// RuleStep: the row with the largest threshold not above the count.
	RuleStep Rule = "Step"
	// RuleBelowFirstStep: the count is below every threshold; the first row
	// (lowest threshold) applies.
	RuleBelowFirstStep Rule = "BelowFirstStep"
	// RuleEmptyList: the list is empty or absent; the term is 0.
	RuleEmptyList Rule = "EmptyList"
)

// Terms of the result: which count gave the replicas.
const (
	TermCores = "cores"
	TermNodes = "nodes"
)

// Term is one of the two terms of a result: what the cores or the nodes
// count asks for.
type Term struct {
	// Count is the cores or nodes count the term was computed from.
	Count int `json:"count"`
	// Replicas is the term's replicas after every rule of its mode (before
	// the int32 saturation of Explanation.Replicas).
	Replicas int64 `json:"replicas"`
	// Rule is what decided Replicas.
	Rule Rule `json:"rule"`
	// PerReplica (linear) is coresPerReplica or nodesPerReplica.
	PerReplica float64 `json:"perReplica,omitempty"`
	// Ceil (linear) is ceil(Count / PerReplica), before min and max.
	Ceil float64 `json:"ceil,omitempty"`
	// Step (ladder) is the index of the row used in the list as written,
	// -1 when the list is empty.
	Step int `json:"step,omitempty"`
}

// Explanation is a result with its reasoning, for decision records.
type Explanation struct {
	// Mode is ModeLinear or ModeLadder ("" when the params are invalid).
	Mode string `json:"mode"`
	// IncludeUnschedulableNodes: the counts are of all nodes, not only the
	// schedulable ones.
	IncludeUnschedulableNodes bool `json:"includeUnschedulableNodes,omitempty"`
	Cores                     Term `json:"cores"`
	Nodes                     Term `json:"nodes"`
	// Winner is TermCores or TermNodes: the term Replicas comes from (the
	// nodes term on a tie, as in CPA).
	Winner string `json:"winner"`
	// Saturated: the winning term exceeds math.MaxInt32; Replicas is
	// math.MaxInt32 where CPA's int32 conversion would wrap around.
	Saturated bool `json:"saturated,omitempty"`
	// Replicas is the result.
	Replicas int32 `json:"replicas"`
}

// ClusterSize is what CPA counts: all nodes and cores, and the schedulable
// ones (not cordoned and Ready). Cores are allocatable CPUs rounded up.
type ClusterSize struct {
	Nodes            int `json:"nodes"`
	Cores            int `json:"cores"`
	SchedulableNodes int `json:"schedulableNodes"`
	SchedulableCores int `json:"schedulableCores"`
}

// counts returns the (nodes, cores) pair params apply to.
func (s ClusterSize) counts(includeUnschedulable bool) (nodes, cores int) {
	if includeUnschedulable {
		return s.Nodes, s.Cores
	}
	return s.SchedulableNodes, s.SchedulableCores
}

// Replicas is the replica count CPA sets for a cluster of size size.
func Replicas(p Params, size ClusterSize) int32 {
	return Explain(p, size).Replicas
}

// Explain computes the replica count CPA sets for a cluster of size size and
// says how. The params should pass Validate; params with neither mode give 0
// (Mode ""), params with both use linear.
func Explain(p Params, size ClusterSize) Explanation {
	var e Explanation
	switch {
	case p.Linear != nil:
		e = explainLinear(*p.Linear, size)
	case p.Ladder != nil:
		e = explainLadder(*p.Ladder, size)
	default:
		return Explanation{Winner: TermNodes}
	}
	winner := e.Nodes.Replicas
	e.Winner = TermNodes
	if e.Cores.Replicas > e.Nodes.Replicas {
		winner, e.Winner = e.Cores.Replicas, TermCores
	}
	e.Replicas, e.Saturated = toInt32(winner)
	return e
}

func explainLinear(l Linear, size ClusterSize) Explanation {
	nodes, cores := size.counts(l.IncludeUnschedulableNodes)
	lo := effectiveMin(l.Min)
	e := Explanation{
		Mode:                      ModeLinear,
		IncludeUnschedulableNodes: l.IncludeUnschedulableNodes,
		Cores:                     linearTerm(cores, l.CoresPerReplica, lo, l.Max),
		Nodes:                     linearTerm(nodes, l.NodesPerReplica, lo, l.Max),
	}
	if l.PreventSinglePointFailure && nodes > 1 && e.Nodes.Replicas < 2 {
		e.Nodes.Replicas, e.Nodes.Rule = 2, RuleSinglePointFailure
	}
	return e
}

// linearTerm is CPA's per-term formula, in float64 as CPA computes it:
// ceil(count / per), lowered to hi when hi != 0, then raised to lo.
func linearTerm(count int, per float64, lo, hi int) Term {
	t := Term{Count: count, PerReplica: per}
	if per == 0 {
		t.Replicas, t.Rule = 1, RuleNoPerReplica
		return t
	}
	res := math.Ceil(float64(count) / per)
	t.Ceil, t.Rule = res, RuleCeil
	if hi != 0 && float64(hi) < res {
		res, t.Rule = float64(hi), RuleMax
	}
	if float64(lo) > res {
		res, t.Rule = float64(lo), RuleMin
	}
	t.Replicas = floatToInt64(res)
	return t
}

func explainLadder(l Ladder, size ClusterSize) Explanation {
	nodes, cores := size.counts(l.IncludeUnschedulableNodes)
	e := Explanation{Mode: ModeLadder, IncludeUnschedulableNodes: l.IncludeUnschedulableNodes}
	e.Cores = ladderTerm(cores, l.CoresToReplicas)
	e.Nodes = ladderTerm(nodes, l.NodesToReplicas)
	return e
}

func ladderTerm(count int, rows [][]int) Term {
	replicas, step, rule := lookup(count, rows)
	return Term{Count: count, Replicas: int64(replicas), Rule: rule, Step: step}
}

// floatToInt64 converts a whole float64 without Go's implementation-defined
// result for values out of range: they saturate.
func floatToInt64(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// toInt32 saturates where CPA's int32 conversion wraps around.
func toInt32(v int64) (int32, bool) {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32, true
	case v < 0:
		return 0, true
	}
	return int32(v), false
}
