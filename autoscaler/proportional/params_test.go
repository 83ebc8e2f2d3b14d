package proportional

import (
	"reflect"
	"strings"
	"testing"
)

// Parser cases re-expressed from CPA v1.10.3's linearcontroller and
// laddercontroller tests (TestControllerParser), plus encoding/json semantics
// CPA inherits.
func TestParseJSONLinear(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    *Linear
		wantErr string // substring; "" means accepted
	}{
		{name: "all fields", raw: `{"coresPerReplica": 2, "nodesPerReplica": 1, "min": 1, "max": 100,
			"preventSinglePointFailure": true, "includeUnschedulableNodes": true}`,
			want: &Linear{CoresPerReplica: 2, NodesPerReplica: 1, Min: 1, Max: 100, PreventSinglePointFailure: true, IncludeUnschedulableNodes: true}},
		{name: "trailing comma is invalid JSON", raw: `{"coresPerReplica": 2, "nodesPerReplica": 1, "min": 1, "max": 100,}`,
			wantErr: "not CPA linear params"},
		{name: "invalid JSON", raw: `{ "coresPerReplica": {{ 1:1 } }`, wantErr: "not CPA linear params"},
		{name: "string value", raw: `{ "coresPerReplica": "whatisthis"`, wantErr: "not CPA linear params"},
		{name: "negative nodesPerReplica", raw: `{ "nodesPerReplica": -20 }`, wantErr: "linear.nodesPerReplica: Invalid value: -20"},
		{name: "max below min", raw: `{"nodesPerReplica": 1, "min": 100, "max": 50}`, wantErr: "linear.max: Invalid value: 50"},
		{name: "no per-replica field", raw: `{"min": 1, "max": 100}`, wantErr: "linear: Required value: at least one of coresPerReplica and nodesPerReplica"},
		{name: "bare word bool", raw: `{"coresPerReplica": 2, "preventSinglePointFailure": invalid}`, wantErr: "not CPA linear params"},
		{name: "negative min", raw: `{"coresPerReplica": 2, "min": -1}`, wantErr: "linear.min: Invalid value: -1"},
		{name: "negative max", raw: `{"coresPerReplica": 2, "max": -1}`, wantErr: "linear.max: Invalid value: -1"},
		{name: "negative coresPerReplica", raw: `{"coresPerReplica": -0.5, "nodesPerReplica": 1}`, wantErr: "linear.coresPerReplica: Invalid value: -0.5"},
		{name: "min 0 with max 1 is fine", raw: `{"nodesPerReplica": 1, "min": 0, "max": 1}`,
			want: &Linear{NodesPerReplica: 1, Max: 1}},
		{name: "keys are case-insensitive, unknown keys ignored", raw: `{"CORESPERREPLICA": 256, "NodesPerReplica": 16, "Min": 2, "extra": [1]}`,
			want: &Linear{CoresPerReplica: 256, NodesPerReplica: 16, Min: 2}},
		{name: "case folding does not ignore delimiters", raw: `{"nodes_per_replica": 16}`, wantErr: "at least one of"},
		{name: "the last duplicate key wins", raw: `{"nodesPerReplica": 1, "min": 5, "MIN": 3}`, want: &Linear{NodesPerReplica: 1, Min: 3}},
		{name: "min must be a JSON integer", raw: `{"nodesPerReplica": 1, "min": 1.0}`, wantErr: "not CPA linear params"},
		{name: "exponent is not an integer", raw: `{"nodesPerReplica": 1, "max": 1e2}`, wantErr: "not CPA linear params"},
		{name: "per-replica accepts exponents", raw: `{"coresPerReplica": 2.56e2}`, want: &Linear{CoresPerReplica: 256}},
		{name: "null is the zero value", raw: `null`, wantErr: "at least one of"},
		{name: "top-level array", raw: `[1]`, wantErr: "not CPA linear params"},
		{name: "trailing data", raw: `{"coresPerReplica": 1} {}`, wantErr: "not CPA linear params"},
		{name: "bool as string", raw: `{"coresPerReplica": 1, "preventSinglePointFailure": "true"}`, wantErr: "not CPA linear params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseJSON(ModeLinear, []byte(tt.raw))
			checkParse(t, err, tt.wantErr)
			if err == nil && !reflect.DeepEqual(p.Linear, tt.want) {
				t.Errorf("got %+v, want %+v", p.Linear, tt.want)
			}
		})
	}
}

func TestParseJSONLadder(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    *Ladder
		wantErr string
	}{
		{name: "one list", raw: `{ "coresToReplicas" : [ [1,1] ] }`, want: &Ladder{CoresToReplicas: [][]int{{1, 1}}}},
		{name: "invalid JSON", raw: `{ "coresToReplicas" : {{ 1:1 } }`, wantErr: "not CPA ladder params"},
		{name: "string in a row", raw: `{ "coresToReplicas" : [[ "1, "a"]] }`, wantErr: "not CPA ladder params"},
		{name: "malformed row", raw: `{ "coresToReplicas" : [[:-200]] }`, wantErr: "not CPA ladder params"},
		{name: "negative replicas", raw: `{ "nodesToReplicas" : [[1,1],[5,-2]] }`,
			wantErr: "ladder.nodesToReplicas[1]: Invalid value: [5,-2]: threshold and replicas must be greater than or equal to 0"},
		{name: "negative threshold", raw: `{ "coresToReplicas" : [[-1,1]] }`, wantErr: "ladder.coresToReplicas[0]"},
		{name: "both lists, unschedulable", raw: `{"coresToReplicas": [[0,0],[1,0],[2,2],[3,3]], "nodesToReplicas": [[1,1],[2,2],[3,3]],
			"includeUnschedulableNodes": true}`,
			want: &Ladder{CoresToReplicas: [][]int{{0, 0}, {1, 0}, {2, 2}, {3, 3}}, NodesToReplicas: [][]int{{1, 1}, {2, 2}, {3, 3}}, IncludeUnschedulableNodes: true}},
		{name: "unsorted rows are kept as written", raw: `{"coresToReplicas": [[65535,100],[0,0],[32768,80]]}`,
			want: &Ladder{CoresToReplicas: [][]int{{65535, 100}, {0, 0}, {32768, 80}}}},
		{name: "short, empty and null rows keep their length", raw: `{"nodesToReplicas": [[5], [], null]}`,
			want: &Ladder{NodesToReplicas: [][]int{{5}, {}, {}}}},
		{name: "extra elements are ignored unchecked", raw: `{"nodesToReplicas": [[1, 2, "x", -7]]}`,
			want: &Ladder{NodesToReplicas: [][]int{{1, 2, 0, 0}}}},
		{name: "floats are not integers", raw: `{"nodesToReplicas": [[1, 2.5]]}`, wantErr: "not CPA ladder params"},
		{name: "a row must be an array", raw: `{"nodesToReplicas": [1, 2]}`, wantErr: "not CPA ladder params"},
		{name: "empty object", raw: `{}`, want: &Ladder{}},
		{name: "case-insensitive keys", raw: `{"NODESTOREPLICAS": [[1,3]]}`, want: &Ladder{NodesToReplicas: [][]int{{1, 3}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseJSON(ModeLadder, []byte(tt.raw))
			checkParse(t, err, tt.wantErr)
			if err == nil && !reflect.DeepEqual(p.Ladder, tt.want) {
				t.Errorf("got %#v, want %#v", p.Ladder, tt.want)
			}
		})
	}
}

func checkParse(t *testing.T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case wantErr != "" && err == nil:
		t.Fatalf("accepted; want an error containing %q", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Fatalf("error %q does not contain %q", err, wantErr)
	}
}

func TestParseConfigMap(t *testing.T) {
	linear := `{"nodesPerReplica": 16, "min": 2}`
	tests := []struct {
		name    string
		data    map[string]string
		key     string
		mode    string
		wantErr string
	}{
		{name: "linear", data: map[string]string{"linear": linear}, mode: ModeLinear},
		{name: "ladder", data: map[string]string{"ladder": `{"nodesToReplicas": [[1,1]]}`}, mode: ModeLadder},
		{name: "two keys", data: map[string]string{"linear": linear, "ladder": `{}`},
			wantErr: `data: Invalid value: ["ladder","linear"]: must hold exactly one key`},
		{name: "no key", data: map[string]string{}, wantErr: "must hold exactly one key"},
		{name: "unsupported mode", data: map[string]string{"Linear": linear}, wantErr: `data[Linear]: Unsupported value: "Linear"`},
		{name: "key given picks one of several", data: map[string]string{"linear": linear, "notes": "x"}, key: "linear", mode: ModeLinear},
		{name: "key given but absent", data: map[string]string{"ladder": `{}`}, key: "linear", wantErr: "data[linear]: Required value"},
		{name: "key given must be a mode", data: map[string]string{"params": linear}, key: "params", wantErr: "Unsupported value"},
		{name: "errors name the key", data: map[string]string{"linear": `{"nodesPerReplica": 1, "min": -3}`}, wantErr: "data[linear].min: Invalid value: -3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseConfigMap(tt.data, tt.key)
			checkParse(t, err, tt.wantErr)
			if err == nil && p.Mode() != tt.mode {
				t.Errorf("mode %q, want %q", p.Mode(), tt.mode)
			}
		})
	}
}

func TestDefaultParamsData(t *testing.T) {
	// CPA re-encodes each value of --default-params through interface{}:
	// 1.0 becomes 1, which CPA then accepts as an integer.
	data, err := DefaultParamsData(`{"linear":{"coresPerReplica":256,"nodesPerReplica":16,"min":1.0,"preventSinglePointFailure":true}}`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParseConfigMap(data, "")
	if err != nil {
		t.Fatalf("CPA accepts min 1.0 through --default-params: %v", err)
	}
	if want := (Linear{CoresPerReplica: 256, NodesPerReplica: 16, Min: 1, PreventSinglePointFailure: true}); *p.Linear != want {
		t.Errorf("got %+v, want %+v", *p.Linear, want)
	}
	if _, err := ParseJSON(ModeLinear, []byte(`{"nodesPerReplica":16,"min":1.0}`)); err == nil {
		t.Error("the same min 1.0 in a ConfigMap must be rejected, as CPA does")
	}
	if _, err := DefaultParamsData(`{"linear": `); err == nil || !strings.Contains(err.Error(), "--default-params") {
		t.Errorf("malformed flag: %v", err)
	}
	data, _ = DefaultParamsData(`{"linear":{"nodesPerReplica":1},"ladder":{}}`)
	if _, err := ParseConfigMap(data, ""); err == nil {
		t.Error("two modes in --default-params make a ConfigMap CPA rejects")
	}
}
