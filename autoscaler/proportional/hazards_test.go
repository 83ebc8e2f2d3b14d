package proportional

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestHazards(t *testing.T) {
	root := field.NewPath("spec", "metrics").Index(0).Child("clusterProportional")
	tests := []struct {
		name string
		raw  string // ladder JSON unless it starts with "linear:"
		want []string
	}{
		{name: "empty object", raw: `{}`,
			want: []string{"spec.metrics[0].clusterProportional.ladder: Invalid value: \"{}\": coresToReplicas and nodesToReplicas are both empty"}},
		{name: "empty lists", raw: `{"coresToReplicas": [], "nodesToReplicas": []}`, want: []string{"both empty"}},
		{name: "only zero steps", raw: `{"nodesToReplicas": [[0,0],[10,0]]}`, want: []string{"gives 0 replicas: CPA scales the target to zero for every cluster"}},
		{name: "short row", raw: `{"nodesToReplicas": [[1,1],[5]]}`,
			want: []string{"ladder.nodesToReplicas[1]: Invalid value: [5]: a row must be [threshold, replicas]: CPA reads this row of 1 values as [5 0]"}},
		{name: "long row", raw: `{"coresToReplicas": [[1,1,9]]}`, want: []string{"coresToReplicas[0]: Invalid value: [1,1,0]: a row must be [threshold, replicas]: CPA reads this row of 3 values as [1 1]"}},
		{name: "replicas beyond int32", raw: `{"coresToReplicas": [[1,3000000000]]}`, want: []string{"coresToReplicas[0][1]: Invalid value: 3000000000: must not exceed 2147483647"}},
		{name: "linear max beyond int32", raw: `linear:{"nodesPerReplica": 1, "max": 4294967297}`, want: []string{"linear.max: Invalid value: 4294967297"}},
		{name: "README optional feature is fine", raw: `{"nodesToReplicas": [[0,0],[6,1]]}`},
		{name: "one empty list is fine", raw: `{"nodesToReplicas": [[1,1],[2,2]]}`},
		{name: "linear is fine", raw: `linear:{"coresPerReplica": 256, "nodesPerReplica": 16}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode, raw := ModeLadder, tt.raw
			if rest, ok := strings.CutPrefix(raw, "linear:"); ok {
				mode, raw = ModeLinear, rest
			}
			p, err := ParseJSON(mode, []byte(raw))
			if err != nil {
				t.Fatalf("CPA accepts this: %v", err)
			}
			checkErrors(t, Hazards(p, root), tt.want)
		})
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name string
		p    Params
		want []string
	}{
		{name: "optional feature ladder", p: Params{Ladder: &Ladder{NodesToReplicas: [][]int{{0, 0}, {6, 1}}}},
			want: []string{"ladder: Invalid value: \"a step of 0\": gives 0 replicas when cores: always (coresToReplicas is empty) and nodes: 0 to 5"}},
		{name: "zero step in both lists", p: Params{Ladder: &Ladder{CoresToReplicas: [][]int{{8, 0}, {16, 2}}, NodesToReplicas: [][]int{{3, 1}, {0, 0}}}},
			want: []string{"when cores: 0 to 15 and nodes: 0 to 2"}},
		{name: "zero step in one list only", p: Params{Ladder: &Ladder{CoresToReplicas: [][]int{{8, 0}, {16, 2}}, NodesToReplicas: [][]int{{0, 1}}}}},
		{name: "duplicate threshold", p: Params{Ladder: &Ladder{NodesToReplicas: [][]int{{1, 1}, {4, 2}, {4, 3}}}},
			want: []string{"ladder.nodesToReplicas[2][0]: Duplicate value: \"threshold 4 (also in row 1)"}},
		{name: "spof above max", p: Params{Linear: &Linear{NodesPerReplica: 4, Max: 1, PreventSinglePointFailure: true}},
			want: []string{"linear.max: Invalid value: 1: preventSinglePointFailure gives 2 replicas"}},
		{name: "plain linear", p: Params{Linear: &Linear{NodesPerReplica: 4, Max: 3, PreventSinglePointFailure: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, Warnings(tt.p, nil), tt.want)
		})
	}
}

// checkErrors wants one error per substring, in order.
func checkErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d: %q does not contain %q", i, errs[i].Error(), w)
		}
	}
}
