package proportional

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The two modes, named as CPA names them: the ConfigMap key that holds the
// params and the key of --default-params.
const (
	ModeLinear = "linear"
	ModeLadder = "ladder"
)

// Params are the params of one mode: exactly one of Linear and Ladder is set
// (Validate says so when not).
type Params struct {
	Linear *Linear `json:"linear,omitempty"`
	Ladder *Ladder `json:"ladder,omitempty"`
}

// Mode is ModeLinear or ModeLadder, or "" when neither or both are set.
func (p Params) Mode() string {
	switch {
	case p.Linear != nil && p.Ladder == nil:
		return ModeLinear
	case p.Ladder != nil && p.Linear == nil:
		return ModeLadder
	}
	return ""
}

// Linear are CPA's linear params, with CPA's JSON names:
//
//	replicas = max(ceil(cores / coresPerReplica), ceil(nodes / nodesPerReplica))
//
// each term clamped to [min, max] (max 0: no maximum; min 0 means 1), a zero
// per-replica field giving a term of 1, and preventSinglePointFailure raising
// the nodes term to 2 when there is more than one node.
type Linear struct {
	CoresPerReplica           float64 `json:"coresPerReplica"`
	NodesPerReplica           float64 `json:"nodesPerReplica"`
	Min                       int     `json:"min"`
	Max                       int     `json:"max"`
	PreventSinglePointFailure bool    `json:"preventSinglePointFailure"`
	IncludeUnschedulableNodes bool    `json:"includeUnschedulableNodes"`
}

// Ladder are CPA's ladder params: two lists of [threshold, replicas] rows.
// Each list gives the replicas of the row with the largest threshold not
// above the count (the first row when the count is below every threshold, 0
// when the list is empty); the larger of the two wins. Rows need not be
// sorted. CPA reads a row as a two-element array: a missing element is 0 and
// elements past the second are ignored; rows keep the length they were
// written with so that Hazards can point out such rows (ParseJSON stores a
// placeholder 0 for each ignored element).
type Ladder struct {
	CoresToReplicas           [][]int `json:"coresToReplicas,omitempty"`
	NodesToReplicas           [][]int `json:"nodesToReplicas,omitempty"`
	IncludeUnschedulableNodes bool    `json:"includeUnschedulableNodes"`
}

// cpaLadder is the shape CPA decodes ladder params into: rows are [2]int, so
// encoding/json zero-fills short rows and skips extra elements unchecked.
type cpaLadder struct {
	CoresToReplicas           [][2]int `json:"coresToReplicas"`
	NodesToReplicas           [][2]int `json:"nodesToReplicas"`
	IncludeUnschedulableNodes bool     `json:"includeUnschedulableNodes"`
}

// ladderShape reads the same keys as cpaLadder (same names, so the same
// case-insensitive matching and last-duplicate-wins) to learn row lengths.
type ladderShape struct {
	CoresToReplicas []json.RawMessage `json:"coresToReplicas"`
	NodesToReplicas []json.RawMessage `json:"nodesToReplicas"`
}

// ParseJSON reads the params of mode (ModeLinear or ModeLadder) from raw,
// the JSON CPA reads from its ConfigMap, and accepts and rejects exactly what
// CPA accepts and rejects: Go's encoding/json semantics (keys matched case-
// insensitively, unknown keys ignored, integers only for min, max and ladder
// values, the last of duplicate keys wins) followed by Validate. Errors name
// the field, rooted at mode ("linear.min").
func ParseJSON(mode string, raw []byte) (Params, error) {
	return parse(mode, raw, field.NewPath(mode))
}

// ParseConfigMap reads CPA params from a ConfigMap's data. With key "" the
// data must hold exactly one key, linear or ladder, as CPA requires; with a
// key (linear or ladder) only that key is read and others are ignored.
// Errors name the key ("data[linear].min").
func ParseConfigMap(data map[string]string, key string) (Params, error) {
	dataPath := field.NewPath("data")
	if key == "" {
		if len(data) != 1 {
			keys := make([]string, 0, len(data))
			for k := range data {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return Params{}, field.Invalid(dataPath, keys,
				"must hold exactly one key, linear or ladder (CPA's format), or the key to read must be given")
		}
		for k := range data {
			key = k
		}
	}
	if key != ModeLinear && key != ModeLadder {
		return Params{}, field.NotSupported(dataPath.Key(key), key, []string{ModeLinear, ModeLadder})
	}
	raw, ok := data[key]
	if !ok {
		return Params{}, field.Required(dataPath.Key(key), "the ConfigMap has no such key")
	}
	return parse(key, []byte(raw), dataPath.Key(key))
}

// DefaultParamsData turns the value of CPA's --default-params flag into the
// ConfigMap data CPA creates from it: a JSON object whose values are each
// re-encoded by encoding/json. Re-encoding goes through float64, so CPA
// accepts "min": 1.0 here although it rejects it in a ConfigMap written by
// hand, and integers beyond 2^53 lose precision; this reproduces that.
func DefaultParamsData(flag string) (map[string]string, error) {
	var decoded map[string]any
	if err := json.Unmarshal([]byte(flag), &decoded); err != nil {
		return nil, fmt.Errorf("--default-params: %w", err)
	}
	data := make(map[string]string, len(decoded))
	for k, v := range decoded {
		encoded, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("--default-params[%s]: %w", k, err)
		}
		data[k] = string(encoded)
	}
	return data, nil
}

func parse(mode string, raw []byte, path *field.Path) (Params, error) {
	var p Params
	switch mode {
	case ModeLinear:
		var l Linear
		if err := json.Unmarshal(raw, &l); err != nil {
			return Params{}, field.Invalid(path, abbreviate(raw), "not CPA linear params: "+err.Error())
		}
		if errs := ValidateLinear(l, path); len(errs) > 0 {
			return Params{}, errs.ToAggregate()
		}
		p.Linear = &l
	case ModeLadder:
		l, err := parseLadder(raw)
		if err != nil {
			return Params{}, field.Invalid(path, abbreviate(raw), "not CPA ladder params: "+err.Error())
		}
		if errs := ValidateLadder(l, path); len(errs) > 0 {
			return Params{}, errs.ToAggregate()
		}
		p.Ladder = &l
	default:
		return Params{}, field.NotSupported(path, mode, []string{ModeLinear, ModeLadder})
	}
	return p, nil
}

// parseLadder decodes as CPA does, then learns each row's length.
func parseLadder(raw []byte) (Ladder, error) {
	var exact cpaLadder
	if err := json.Unmarshal(raw, &exact); err != nil {
		return Ladder{}, err
	}
	var shape ladderShape
	if err := json.Unmarshal(raw, &shape); err != nil {
		// Unreachable when the exact decode succeeded; keep CPA's answer.
		shape = ladderShape{}
	}
	return Ladder{
		CoresToReplicas:           rows(exact.CoresToReplicas, shape.CoresToReplicas),
		NodesToReplicas:           rows(exact.NodesToReplicas, shape.NodesToReplicas),
		IncludeUnschedulableNodes: exact.IncludeUnschedulableNodes,
	}, nil
}

// rows gives each decoded row the length it was written with: a short row
// keeps only the values written, a long one gets a 0 per ignored element.
func rows(exact [][2]int, shape []json.RawMessage) [][]int {
	if exact == nil {
		return nil
	}
	out := make([][]int, len(exact))
	for i, e := range exact {
		n := 2
		if i < len(shape) {
			n = rowLength(shape[i])
		}
		row := make([]int, n)
		copy(row, e[:])
		out[i] = row
	}
	return out
}

func rowLength(raw json.RawMessage) int {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return 0
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return 2
	}
	return len(elems)
}

// abbreviate keeps error messages short however long the input is.
func abbreviate(raw []byte) string {
	const limit = 80
	s := strings.TrimSpace(string(raw))
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
