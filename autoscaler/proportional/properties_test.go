package proportional

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
)

const rounds = 3000

func randomLinear(r *rand.Rand) Linear {
	pers := []float64{0, 0, 0.1, 0.3, 0.7, 1, 2, 2.5, 3, 7.3, 16, 256}
	l := Linear{
		CoresPerReplica:           pers[r.IntN(len(pers))],
		NodesPerReplica:           pers[r.IntN(len(pers))],
		Min:                       r.IntN(5),
		PreventSinglePointFailure: r.IntN(2) == 0,
		IncludeUnschedulableNodes: r.IntN(3) == 0,
	}
	if l.CoresPerReplica == 0 && l.NodesPerReplica == 0 {
		l.NodesPerReplica = 1 + r.Float64()*20
	}
	if r.IntN(2) == 0 {
		l.Max = effectiveMin(l.Min) + r.IntN(50)
	}
	return l
}

func randomSize(r *rand.Rand) ClusterSize {
	s := ClusterSize{Nodes: r.IntN(300), Cores: r.IntN(5000)}
	s.SchedulableNodes, s.SchedulableCores = r.IntN(s.Nodes+1), r.IntN(s.Cores+1)
	return s
}

// randomRows: up to 40 rows (past sort.Sort's insertion-sort cutoff of 12),
// thresholds with duplicates, in any order or sorted.
func randomRows(r *rand.Rand) [][]int {
	rows := make([][]int, r.IntN(41))
	for i := range rows {
		rows[i] = []int{r.IntN(60), r.IntN(25)}
	}
	if r.IntN(3) == 0 { // sorted, duplicates in written order
		slices.SortStableFunc(rows, func(a, b []int) int { return a[0] - b[0] })
	}
	return rows
}

// Explain agrees with the reference re-expression of CPA on random params
// and clusters, both modes, unsorted ladders with duplicate thresholds.
func TestAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	for range rounds {
		l := randomLinear(r)
		raw, _ := json.Marshal(l)
		ref, err := refParseLinear(raw)
		if err != nil {
			t.Fatalf("reference rejects %s: %v", raw, err)
		}
		size := randomSize(r)
		if got, want := Replicas(Params{Linear: &l}, size), refLinearReplicas(ref, size); got != want {
			t.Fatalf("linear %s on %+v: got %d, reference %d", raw, size, got, want)
		}

		lad := Ladder{CoresToReplicas: randomRows(r), NodesToReplicas: randomRows(r), IncludeUnschedulableNodes: r.IntN(3) == 0}
		raw, _ = json.Marshal(lad)
		refLad, err := refParseLadder(raw)
		if err != nil {
			t.Fatalf("reference rejects %s: %v", raw, err)
		}
		size = ClusterSize{Nodes: r.IntN(70), Cores: r.IntN(70), SchedulableNodes: r.IntN(70), SchedulableCores: r.IntN(70)}
		e := Explain(Params{Ladder: &lad}, size)
		if want := refLadderReplicas(refLad, size); e.Replicas != want {
			t.Fatalf("ladder %s on %+v: got %d, reference %d", raw, size, e.Replicas, want)
		}
		checkStep(t, e.Cores, lad.CoresToReplicas)
		checkStep(t, e.Nodes, lad.NodesToReplicas)
	}
}

// checkStep: the step named is a row that gives the term's replicas and
// whose threshold fits the count.
func checkStep(t *testing.T, term Term, rows [][]int) {
	t.Helper()
	if len(rows) == 0 {
		if term.Step != -1 || term.Replicas != 0 {
			t.Fatalf("empty list: %+v", term)
		}
		return
	}
	row := rows[term.Step]
	fits := row[0] <= term.Count
	if term.Rule == RuleBelowFirstStep {
		fits = !slices.ContainsFunc(rows, func(r []int) bool { return r[0] < row[0] || r[0] <= term.Count })
	}
	if int64(row[1]) != term.Replicas || !fits {
		t.Fatalf("term %+v names row %v of %v", term, row, rows)
	}
}

// Linear: monotonic in nodes and in cores; min always respected; max
// respected except where the single-point-failure rule gives 2.
func TestLinearProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 2))
	for range rounds {
		l := randomLinear(r)
		p := Params{Linear: &l}
		size := randomSize(r)
		got := Replicas(p, size)
		if int(got) < effectiveMin(l.Min) {
			t.Fatalf("%+v on %+v: %d below min", l, size, got)
		}
		nodes, _ := size.counts(l.IncludeUnschedulableNodes)
		spof := l.PreventSinglePointFailure && nodes > 1 && l.Max < 2 && got == 2
		if l.Max != 0 && int(got) > l.Max && !spof {
			t.Fatalf("%+v on %+v: %d above max", l, size, got)
		}
		bigger := size
		bigger.Nodes += r.IntN(10)
		bigger.SchedulableNodes += r.IntN(10)
		if Replicas(p, bigger) < got {
			t.Fatalf("%+v: more nodes %+v gave fewer replicas than %+v", l, bigger, size)
		}
		bigger = size
		bigger.Cores += r.IntN(100)
		bigger.SchedulableCores += r.IntN(100)
		if Replicas(p, bigger) < got {
			t.Fatalf("%+v: more cores %+v gave fewer replicas than %+v", l, bigger, size)
		}
	}
}

// monotonicRows: replicas never decrease as thresholds grow; written in a
// random order.
func monotonicRows(r *rand.Rand) [][]int {
	rows := make([][]int, r.IntN(20))
	threshold, replicas := r.IntN(3), r.IntN(3)
	for i := range rows {
		rows[i] = []int{threshold, replicas}
		threshold += 1 + r.IntN(10)
		replicas += r.IntN(4)
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	return rows
}

func TestLadderMonotonic(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 3))
	for range rounds {
		l := Ladder{CoresToReplicas: monotonicRows(r), NodesToReplicas: monotonicRows(r)}
		p := Params{Ladder: &l}
		size := sched(r.IntN(200), r.IntN(200))
		got := Replicas(p, size)
		if more := sched(size.Nodes+r.IntN(20), size.Cores); Replicas(p, more) < got {
			t.Fatalf("%+v: %+v gave fewer replicas than %+v", l, more, size)
		}
		if more := sched(size.Nodes, size.Cores+r.IntN(20)); Replicas(p, more) < got {
			t.Fatalf("%+v: %+v gave fewer replicas than %+v", l, more, size)
		}
		// Hazards' reach: no cluster gives more than the highest step
		// nor less than the lowest reachable one.
		c, n := reach(l.CoresToReplicas), reach(l.NodesToReplicas)
		if int(got) > max(c.hi, n.hi) || int(got) < max(c.lo, n.lo) {
			t.Fatalf("%+v on %+v: %d outside reach %v %v", l, size, got, c, n)
		}
	}
}

// FuzzParseJSON: ParseJSON accepts exactly what the reference (CPA)
// accepts, and accepted params give the reference's replicas.
func FuzzParseJSON(f *testing.F) {
	for _, seed := range []string{
		`{"coresPerReplica": 2, "nodesPerReplica": 1, "min": 1, "max": 100, "preventSinglePointFailure": true}`,
		`{"nodesPerReplica": -20}`, `{"min": 1, "max": 100}`, `{"NODESPERREPLICA": 0.7, "min": 0, "max": 1}`,
		`{"coresToReplicas": [[1,1],[64,3],[512,5]], "nodesToReplicas": [[1,1],[2,2]]}`,
		`{"coresToReplicas": [[5], [], null, [1,2,"x"]]}`, `{"nodesToReplicas": [[1, 2.5]]}`, `{}`, `null`, `[`,
		`{"coresToReplicas": [[3,1],[1,-1]]}`, `{"min": 1e2, "coresPerReplica": 1}`,
	} {
		f.Add(false, seed)
		f.Add(true, seed)
	}
	sizes := []ClusterSize{sched(0, 0), sched(1, 2), sched(3, 12), sched(70, 300), {Nodes: 9, Cores: 40, SchedulableNodes: 4, SchedulableCores: 10}}
	f.Fuzz(func(t *testing.T, ladder bool, raw string) {
		if ladder {
			p, err := ParseJSON(ModeLadder, []byte(raw))
			ref, refErr := refParseLadder([]byte(raw))
			if (err == nil) != (refErr == nil) {
				t.Fatalf("%s: ParseJSON error %v, CPA error %v", raw, err, refErr)
			}
			if err != nil {
				return
			}
			Hazards(p, nil)
			Warnings(p, nil)
			for _, s := range sizes {
				e := Explain(p, s)
				if want := refLadderReplicas(ref, s); e.Replicas != want && !e.Saturated {
					t.Fatalf("%s on %+v: got %d, CPA %d", raw, s, e.Replicas, want)
				}
			}
			return
		}
		p, err := ParseJSON(ModeLinear, []byte(raw))
		ref, refErr := refParseLinear([]byte(raw))
		if (err == nil) != (refErr == nil) {
			t.Fatalf("%s: ParseJSON error %v, CPA error %v", raw, err, refErr)
		}
		if err != nil {
			return
		}
		Hazards(p, nil)
		Warnings(p, nil)
		for _, s := range sizes {
			e := Explain(p, s)
			if want := refLinearReplicas(ref, s); e.Replicas != want && !e.Saturated {
				t.Fatalf("%s on %+v: got %d, CPA %d", raw, s, e.Replicas, want)
			}
		}
	})
}

// Range bounds every answer, and its ends are reached (linear: min at an
// empty cluster, max on a big one).
func TestRange(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 5))
	for range rounds {
		l := randomLinear(r)
		lad := Ladder{CoresToReplicas: randomRows(r), NodesToReplicas: randomRows(r)}
		for _, p := range []Params{{Linear: &l}, {Ladder: &lad}} {
			lo, hi, bounded := Range(p)
			size := randomSize(r)
			got := int(Replicas(p, size))
			if got < lo || (bounded && got > hi) {
				t.Fatalf("%+v %+v on %+v: %d outside [%d, %d]", p.Linear, p.Ladder, size, got, lo, hi)
			}
		}
		if lo, _, _ := Range(Params{Linear: &l}); int(Replicas(Params{Linear: &l}, ClusterSize{})) != lo {
			t.Fatalf("%+v: an empty cluster gives %d, not min %d", l, Replicas(Params{Linear: &l}, ClusterSize{}), lo)
		}
		if _, hi, bounded := Range(Params{Linear: &l}); bounded && l.NodesPerReplica > 0 &&
			int(Replicas(Params{Linear: &l}, sched(1e6, 1e7))) != hi {
			t.Fatalf("%+v: a huge cluster does not reach max %d", l, hi)
		}
	}
}
