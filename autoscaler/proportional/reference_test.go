package proportional

import (
	"encoding/json"
	"errors"
	"math"
	"sort"
)

// An independent re-expression of CPA v1.10.3's controllers, kept as close to
// CPA's structure as possible (rows as [2]int, the params sorted once at load,
// float64 clamps through math.Min and math.Max, int and int32 conversions),
// used as the oracle of the randomized and fuzz tests.

type refRow [2]int

type refRows []refRow

func (r refRows) Len() int           { return len(r) }
func (r refRows) Less(i, j int) bool { return r[i][0] < r[j][0] }
func (r refRows) Swap(i, j int)      { r[i], r[j] = r[j], r[i] }

type refLinear struct {
	CoresPerReplica           float64 `json:"coresPerReplica"`
	NodesPerReplica           float64 `json:"nodesPerReplica"`
	Min                       int     `json:"min"`
	Max                       int     `json:"max"`
	PreventSinglePointFailure bool    `json:"preventSinglePointFailure"`
	IncludeUnschedulableNodes bool    `json:"includeUnschedulableNodes"`
}

type refLadder struct {
	CoresToReplicas           refRows `json:"coresToReplicas"`
	NodesToReplicas           refRows `json:"nodesToReplicas"`
	IncludeUnschedulableNodes bool    `json:"includeUnschedulableNodes"`
}

var errRef = errors.New("rejected")

func refParseLinear(raw []byte) (*refLinear, error) {
	var p refLinear
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Min < 0 {
		return nil, errRef
	}
	if p.Min == 0 {
		p.Min = 1
	}
	if p.Max != 0 && p.Max < p.Min {
		return nil, errRef
	}
	if p.CoresPerReplica == 0 && p.NodesPerReplica == 0 {
		return nil, errRef
	}
	if p.CoresPerReplica < 0 || p.NodesPerReplica < 0 {
		return nil, errRef
	}
	return &p, nil
}

func refParseLadder(raw []byte) (*refLadder, error) {
	var p refLadder
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	for _, list := range []refRows{p.CoresToReplicas, p.NodesToReplicas} {
		for _, e := range list {
			if e[0] < 0 || e[1] < 0 {
				return nil, errRef
			}
		}
	}
	sort.Sort(p.CoresToReplicas)
	sort.Sort(p.NodesToReplicas)
	return &p, nil
}

func refLinearTerm(p *refLinear, resources int, per float64) int {
	if per == 0 {
		return 1
	}
	res := math.Ceil(float64(resources) / per)
	if p.Max != 0 {
		res = math.Min(float64(p.Max), res)
	}
	return int(math.Max(float64(p.Min), res))
}

func refLinearReplicas(p *refLinear, s ClusterSize) int32 {
	nodes, cores := s.SchedulableNodes, s.SchedulableCores
	if p.IncludeUnschedulableNodes {
		nodes, cores = s.Nodes, s.Cores
	}
	fromCores := refLinearTerm(p, cores, p.CoresPerReplica)
	fromNodes := refLinearTerm(p, nodes, p.NodesPerReplica)
	if p.PreventSinglePointFailure && nodes > 1 && fromNodes < 2 {
		fromNodes = 2
	}
	if fromCores > fromNodes {
		return int32(fromCores)
	}
	return int32(fromNodes)
}

func refLookup(resources int, entries refRows) int {
	if len(entries) == 0 {
		return 0
	}
	pos := sort.Search(len(entries), func(i int) bool { return resources < entries[i][0] })
	if pos > 0 {
		pos--
	}
	return entries[pos][1]
}

func refLadderReplicas(p *refLadder, s ClusterSize) int32 {
	nodes, cores := s.SchedulableNodes, s.SchedulableCores
	if p.IncludeUnschedulableNodes {
		nodes, cores = s.Nodes, s.Cores
	}
	fromCores, fromNodes := refLookup(cores, p.CoresToReplicas), refLookup(nodes, p.NodesToReplicas)
	if fromCores > fromNodes {
		return int32(fromCores)
	}
	return int32(fromNodes)
}
