package proportional

import "fmt"

// String is a one-line account of the result for decision records and
// events, e.g. "7 from nodes (linear): nodes 100: ceil(100 / 16) = 7; cores
// 400: ceil(400 / 256) = 2".
func (e Explanation) String() string {
	if e.Mode == "" {
		return fmt.Sprintf("%d: no linear or ladder params", e.Replicas)
	}
	all := ""
	if e.IncludeUnschedulableNodes {
		all = ", unschedulable nodes included"
	}
	saturated := ""
	if e.Saturated {
		saturated = " (saturated at 2147483647)"
	}
	first, second, otherName := e.Nodes, e.Cores, TermCores
	if e.Winner == TermCores {
		first, second, otherName = e.Cores, e.Nodes, TermNodes
	}
	return fmt.Sprintf("%d%s from %s (%s%s): %s %d: %s; %s %d: %s", e.Replicas, saturated, e.Winner, e.Mode, all,
		e.Winner, first.Count, first.describe(e.Winner), otherName, second.Count, second.describe(otherName))
}

// describe says how a term got its replicas; name is TermCores or TermNodes.
func (t Term) describe(name string) string {
	switch t.Rule {
	case RuleNoPerReplica:
		return fmt.Sprintf("%sPerReplica unset = 1", name)
	case RuleCeil:
		return fmt.Sprintf("ceil(%d / %g) = %d", t.Count, t.PerReplica, t.Replicas)
	case RuleMax:
		return fmt.Sprintf("ceil(%d / %g) = %g, max %d", t.Count, t.PerReplica, t.Ceil, t.Replicas)
	case RuleMin:
		return fmt.Sprintf("ceil(%d / %g) = %g, min %d", t.Count, t.PerReplica, t.Ceil, t.Replicas)
	case RuleSinglePointFailure:
		return fmt.Sprintf("preventSinglePointFailure = %d", t.Replicas)
	case RuleStep:
		return fmt.Sprintf("%sToReplicas[%d] = %d", name, t.Step, t.Replicas)
	case RuleBelowFirstStep:
		return fmt.Sprintf("below every threshold, %sToReplicas[%d] = %d", name, t.Step, t.Replicas)
	case RuleEmptyList:
		return fmt.Sprintf("%sToReplicas empty = 0", name)
	}
	return fmt.Sprintf("%d", t.Replicas)
}
