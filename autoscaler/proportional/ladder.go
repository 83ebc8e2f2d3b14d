package proportional

import (
	"math"
	"slices"
	"sort"
)

// CPA sorts each ladder list by threshold with sort.Sort when it loads the
// params and then binary-searches it. For rows with distinct thresholds any
// sort gives the same order; rows sharing a threshold end up in the order
// sort.Sort leaves them, which this package reproduces by sorting a copy
// with sort.Sort and the same comparison (threshold only).

// ladderSort sorts rows by threshold and carries each row's index in the
// list as written, so that an explanation can name the row.
type ladderSort struct {
	rows [][]int
	idx  []int
}

func (s ladderSort) Len() int           { return len(s.rows) }
func (s ladderSort) Less(i, j int) bool { return cell(s.rows[i], 0) < cell(s.rows[j], 0) }
func (s ladderSort) Swap(i, j int) {
	s.rows[i], s.rows[j] = s.rows[j], s.rows[i]
	s.idx[i], s.idx[j] = s.idx[j], s.idx[i]
}

// sorted returns the rows in CPA's order and, when that differs from the
// order written, the written index of each (nil: the same order). Rows
// already strictly ascending are used as they are: no copy, no allocation.
func sorted(rows [][]int) ([][]int, []int) {
	ascending := true
	for i := 1; i < len(rows); i++ {
		if cell(rows[i-1], 0) >= cell(rows[i], 0) {
			ascending = false
			break
		}
	}
	if ascending {
		return rows, nil
	}
	s := ladderSort{rows: slices.Clone(rows), idx: make([]int, len(rows))}
	for i := range s.idx {
		s.idx[i] = i
	}
	sort.Sort(s)
	return s.rows, s.idx
}

// lookup is CPA's ladder lookup: the replicas of the last row (in sorted
// order) whose threshold is at most count, or of the first row when count is
// below every threshold; 0 for an empty list. step is the row's index as
// written (-1 for an empty list).
func lookup(count int, rows [][]int) (replicas, step int, rule Rule) {
	if len(rows) == 0 {
		return 0, -1, RuleEmptyList
	}
	ordered, idx := sorted(rows)
	pos := sort.Search(len(ordered), func(i int) bool { return count < cell(ordered[i], 0) })
	rule = RuleStep
	if pos == 0 {
		rule = RuleBelowFirstStep
	} else {
		pos--
	}
	step = pos
	if idx != nil {
		step = idx[pos]
	}
	return cell(ordered[pos], 1), step, rule
}

// forEachStep calls fn with each row's replicas and the counts [lo, hi) that
// select it, in sorted order; hi is math.MaxInt for the last row. The first
// row also covers every count below its threshold. Rows shadowed by a
// duplicate threshold get an empty range (lo >= hi).
func forEachStep(rows [][]int, fn func(lo, hi, replicas int)) {
	ordered, _ := sorted(rows)
	for i, row := range ordered {
		lo, hi := 0, math.MaxInt
		if i > 0 {
			lo = cell(row, 0)
		}
		if i+1 < len(ordered) {
			hi = cell(ordered[i+1], 0)
		}
		fn(lo, hi, cell(row, 1))
	}
}

// span is the lowest and highest replicas a list can give for counts >= 0.
type span struct{ lo, hi int }

func reach(rows [][]int) span {
	if len(rows) == 0 {
		return span{}
	}
	s := span{lo: math.MaxInt, hi: math.MinInt}
	forEachStep(rows, func(lo, hi, replicas int) {
		if lo >= hi && hi != math.MaxInt { // shadowed (the last row always counts)
			return
		}
		s.lo, s.hi = min(s.lo, replicas), max(s.hi, replicas)
	})
	return s
}

// Range is the lowest and highest replica count p can give over all cluster
// sizes, before Explain's int32 saturation; bounded is false when there is
// no highest (linear with max 0). A ladder's lowest treats the cores and
// nodes counts as independent, so it may be below what a real cluster can
// reach but never above. A caller that clamps to [lo, hi] never changes an
// answer of p.
func Range(p Params) (lo, hi int, bounded bool) {
	switch {
	case p.Linear != nil:
		l := p.Linear
		lo = effectiveMin(l.Min)
		if l.Max == 0 {
			return lo, 0, false
		}
		hi = l.Max
		if l.PreventSinglePointFailure {
			hi = max(hi, 2)
		}
		return lo, hi, true
	case p.Ladder != nil:
		c, n := reach(p.Ladder.CoresToReplicas), reach(p.Ladder.NodesToReplicas)
		return max(c.lo, n.lo), max(c.hi, n.hi), true
	}
	return 0, 0, true
}
