package proportional

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate reports what CPA rejects in p, every problem at once (CPA stops
// at the first), and that exactly one of linear and ladder must be set.
// fldPath names the object holding linear and ladder, e.g.
// spec.metrics[0].clusterProportional.
func Validate(p Params, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case p.Linear == nil && p.Ladder == nil:
		errs = append(errs, field.Required(fldPath, "exactly one of linear and ladder is required"))
	case p.Linear != nil && p.Ladder != nil:
		errs = append(errs, field.Forbidden(fldPath.Child(ModeLadder), "linear and ladder are mutually exclusive: set one"))
	}
	if p.Linear != nil {
		errs = append(errs, ValidateLinear(*p.Linear, fldPath.Child(ModeLinear))...)
	}
	if p.Ladder != nil {
		errs = append(errs, ValidateLadder(*p.Ladder, fldPath.Child(ModeLadder))...)
	}
	return errs
}

// ValidateLinear reports what CPA rejects in linear params: a negative min;
// a max that is neither 0 nor at least min (min 0 counting as 1); both
// per-replica fields 0; a negative per-replica field. It also rejects a NaN
// or infinite per-replica value, which CPA's JSON cannot carry.
func ValidateLinear(l Linear, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	minPath, maxPath := fldPath.Child("min"), fldPath.Child("max")
	if l.Min < 0 {
		errs = append(errs, field.Invalid(minPath, l.Min, "must be greater than or equal to 0 (0 means 1)"))
		if l.Max < 0 {
			errs = append(errs, field.Invalid(maxPath, l.Max, "must be 0 (no maximum) or greater than or equal to min"))
		}
	} else if effective := effectiveMin(l.Min); l.Max != 0 && l.Max < effective {
		errs = append(errs, field.Invalid(maxPath, l.Max,
			fmt.Sprintf("must be 0 (no maximum) or greater than or equal to min (%d)", effective)))
	}
	if l.CoresPerReplica == 0 && l.NodesPerReplica == 0 {
		errs = append(errs, field.Required(fldPath,
			"at least one of coresPerReplica and nodesPerReplica must be greater than 0"))
	}
	errs = append(errs, validatePerReplica(l.CoresPerReplica, fldPath.Child("coresPerReplica"))...)
	errs = append(errs, validatePerReplica(l.NodesPerReplica, fldPath.Child("nodesPerReplica"))...)
	return errs
}

func validatePerReplica(v float64, fldPath *field.Path) field.ErrorList {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return field.ErrorList{field.Invalid(fldPath, v, "must be a finite number")}
	case v < 0:
		return field.ErrorList{field.Invalid(fldPath, v, "must be greater than or equal to 0 (0: not used)")}
	}
	return nil
}

// effectiveMin is CPA's min: 0 means 1.
func effectiveMin(m int) int {
	if m == 0 {
		return 1
	}
	return m
}

// ValidateLadder reports what CPA rejects in ladder params that decoded:
// a negative threshold or replicas value (in the two elements CPA reads).
func ValidateLadder(l Ladder, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range ladderLists(l, fldPath) {
		for i, row := range list.rows {
			if cell(row, 0) < 0 || cell(row, 1) < 0 {
				errs = append(errs, field.Invalid(list.path.Index(i), row,
					"threshold and replicas must be greater than or equal to 0"))
			}
		}
	}
	return errs
}

type namedList struct {
	rows [][]int
	path *field.Path
}

func ladderLists(l Ladder, fldPath *field.Path) [2]namedList {
	return [2]namedList{
		{l.CoresToReplicas, fldPath.Child("coresToReplicas")},
		{l.NodesToReplicas, fldPath.Child("nodesToReplicas")},
	}
}

// cell is element i of a row as CPA reads it: 0 when the row is shorter.
func cell(row []int, i int) int {
	if i < len(row) {
		return row[i]
	}
	return 0
}

// Hazards reports params CPA accepts but that do harm: a ladder giving 0
// replicas whatever the cluster size (empty lists, "{}", only zero steps:
// CPA scales the target to zero without a word); a ladder row that is not
// exactly [threshold, replicas] (CPA silently reads a missing value as 0 and
// drops extra ones); a min, max or replicas value above 2147483647 (CPA's
// int32 conversion wraps it). Call it on params Validate accepts. An
// Autoscaler rejects hazards; the calculator warns about them.
func Hazards(p Params, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l := p.Linear; l != nil {
		path := fldPath.Child(ModeLinear)
		for _, v := range []struct {
			name  string
			value int
		}{{"min", l.Min}, {"max", l.Max}} {
			if v.value > math.MaxInt32 {
				errs = append(errs, field.Invalid(path.Child(v.name), v.value,
					"must not exceed 2147483647: CPA's int32 conversion wraps it around"))
			}
		}
	}
	if l := p.Ladder; l != nil {
		errs = append(errs, ladderHazards(*l, fldPath.Child(ModeLadder))...)
	}
	return errs
}

func ladderHazards(l Ladder, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range ladderLists(l, fldPath) {
		for i, row := range list.rows {
			switch {
			case len(row) != 2:
				errs = append(errs, field.Invalid(list.path.Index(i), row, fmt.Sprintf(
					"a row must be [threshold, replicas]: CPA reads this row of %d values as %v", len(row), cpaRow(row))))
			case row[1] > math.MaxInt32:
				errs = append(errs, field.Invalid(list.path.Index(i).Index(1), row[1],
					"must not exceed 2147483647: CPA's int32 conversion wraps it around"))
			}
		}
	}
	cores, nodes := reach(l.CoresToReplicas), reach(l.NodesToReplicas)
	switch {
	case len(l.CoresToReplicas) == 0 && len(l.NodesToReplicas) == 0:
		errs = append(errs, field.Invalid(fldPath, "{}",
			"coresToReplicas and nodesToReplicas are both empty: CPA gives 0 replicas for every cluster, scaling the target to zero"))
	case cores.hi == 0 && nodes.hi == 0:
		errs = append(errs, field.Invalid(fldPath, "all steps 0",
			"every step reachable in coresToReplicas and nodesToReplicas gives 0 replicas: CPA scales the target to zero for every cluster"))
	}
	return errs
}

func cpaRow(row []int) [2]int {
	return [2]int{cell(row, 0), cell(row, 1)}
}

// Warnings reports CPA behaviour that is legitimate but easy to overlook:
// a ladder that gives 0 replicas for some cluster sizes (an Autoscaler keeps
// minReplicas instead of scaling to zero), duplicate ladder thresholds (CPA
// uses the row its sort leaves last), and preventSinglePointFailure raising
// replicas above max. Nothing here is rejected.
func Warnings(p Params, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l := p.Linear; l != nil && l.PreventSinglePointFailure && l.Max == 1 {
		errs = append(errs, field.Invalid(fldPath.Child(ModeLinear, "max"), l.Max,
			"preventSinglePointFailure gives 2 replicas, above max, on any cluster of more than one node (as CPA does)"))
	}
	l := p.Ladder
	if l == nil {
		return errs
	}
	path := fldPath.Child(ModeLadder)
	for _, list := range ladderLists(*l, path) {
		seen := make(map[int]int, len(list.rows))
		for i, row := range list.rows {
			if j, dup := seen[cell(row, 0)]; dup {
				errs = append(errs, field.Duplicate(list.path.Index(i).Index(0), fmt.Sprintf(
					"threshold %d (also in row %d): CPA uses whichever of the rows its sort leaves last", cell(row, 0), j)))
			}
			seen[cell(row, 0)] = i
		}
	}
	cores, nodes := reach(l.CoresToReplicas), reach(l.NodesToReplicas)
	if cores.lo == 0 && nodes.lo == 0 && (cores.hi > 0 || nodes.hi > 0) {
		errs = append(errs, field.Invalid(path, "a step of 0", fmt.Sprintf(
			"gives 0 replicas when %s and %s: CPA scales the target to zero there; an Autoscaler does so only with minReplicas 0, else it keeps minReplicas",
			zeroWhere("cores", l.CoresToReplicas), zeroWhere("nodes", l.NodesToReplicas))))
	}
	return errs
}

// zeroWhere describes the counts for which a list gives 0.
func zeroWhere(what string, rows [][]int) string {
	if len(rows) == 0 {
		return fmt.Sprintf("%s: always (%sToReplicas is empty)", what, what)
	}
	var parts []string
	forEachStep(rows, func(lo, hi, replicas int) {
		switch {
		case replicas != 0 || (lo >= hi && hi != math.MaxInt):
		case hi == math.MaxInt:
			parts = append(parts, fmt.Sprintf("%d or more", lo))
		default:
			parts = append(parts, fmt.Sprintf("%d to %d", lo, hi-1))
		}
	})
	return what + ": " + strings.Join(parts, ", ")
}
