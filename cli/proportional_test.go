package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

// runSplit runs the command with stdin and returns stdout and stderr apart.
func runSplit(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestProportionalReplicas(t *testing.T) {
	seedLadder := `{"coresToReplicas":[[1,1],[3,3],[256,4],[512,5],[1024,7]],"nodesToReplicas":[[1,1],[2,2],[100,5],[200,12]]}`
	tests := []struct {
		name     string
		args     []string
		stdin    string
		want     int32
		warning  string
		errorHas string
	}{
		{name: "float64 rounding", args: []string{"--params", `{"linear":{"coresPerReplica":0.7}}`, "--nodes", "1", "--cores", "21"}, want: 31},
		{name: "README linear", args: []string{"--params", `{"linear":{"coresPerReplica":2,"nodesPerReplica":1,"min":1,"max":100,"preventSinglePointFailure":true,"includeUnschedulableNodes":true}}`,
			"--nodes", "1", "--cores", "1", "--all-nodes", "4", "--all-cores", "13"}, want: 7},
		{name: "spof above max", args: []string{"--mode", "linear", "--params", `{"nodesPerReplica":10,"max":1,"preventSinglePointFailure":true}`, "--nodes", "3", "--cores", "12"},
			want: 2, warning: "preventSinglePointFailure gives 2 replicas, above max"},
		{name: "seed ladder", args: []string{"--mode", "ladder", "--params", seedLadder, "--nodes", "120", "--cores", "400"}, want: 5},
		{name: "below the first step", args: []string{"--params", `{"ladder":{"coresToReplicas":[[64,3],[128,5]]}}`, "--nodes", "1", "--cores", "4"}, want: 3},
		{name: "unschedulable ignored by default", args: []string{"--params", `{"ladder":{"nodesToReplicas":[[1,1],[10,4]]}}`,
			"--nodes", "2", "--cores", "8", "--all-nodes", "12", "--all-cores", "48"}, want: 1},
		{name: "empty ladder: CPA's 0 and a warning", args: []string{"--params", `{"ladder":{}}`, "--nodes", "3", "--cores", "12"},
			want: 0, warning: "warning: ladder: Invalid value: \"{}\": coresToReplicas and nodesToReplicas are both empty"},
		{name: "short row", args: []string{"--params", `{"ladder":{"nodesToReplicas":[[1,1],[3]]}}`, "--nodes", "3", "--cores", "12"},
			want: 0, warning: "CPA reads this row of 1 values as [3 0]"},
		{name: "configmap from stdin", stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  linear: '{\"nodesPerReplica\": 16, \"min\": 2}'\n",
			args: []string{"--configmap", "-", "--nodes", "40", "--cores", "160"}, want: 3},
		{name: "saturated", args: []string{"--params", `{"linear":{"coresPerReplica":1e-9}}`, "--nodes", "1", "--cores", "8"},
			want: 2147483647, warning: "more than an int32 holds"},
		{name: "rejected params", args: []string{"--params", `{"linear":{"min":-1}}`, "--nodes", "1", "--cores", "1"},
			errorHas: "the params are invalid (CPA rejects them):\n  data[linear].min: Invalid value: -1"},
		{name: "rejected ladder", args: []string{"--mode", "ladder", "--params", `{"nodesToReplicas":[[1,2.5]]}`, "--nodes", "1", "--cores", "1"},
			errorHas: "not CPA ladder params: json: cannot unmarshal number 2.5"},
		{name: "two modes", args: []string{"--params", `{"linear":{"nodesPerReplica":1},"ladder":{}}`, "--nodes", "1", "--cores", "1"},
			errorHas: "must hold exactly one key"},
		{name: "inner object without --mode", args: []string{"--params", `{"nodesPerReplica":1}`, "--nodes", "1", "--cores", "1"},
			errorHas: `data[nodesPerReplica]: Unsupported value: "nodesPerReplica"`},
		{name: "not JSON", args: []string{"--params", `linear`, "--nodes", "1", "--cores", "1"}, errorHas: `--params: want {"linear": {...}}`},
		{name: "cores required", args: []string{"--params", `{"linear":{"nodesPerReplica":1}}`, "--nodes", "1"}, errorHas: `required flag(s) "cores" not set`},
		{name: "impossible cluster", args: []string{"--params", `{"linear":{"nodesPerReplica":1}}`, "--nodes", "5", "--cores", "-1", "--all-nodes", "4"},
			errorHas: "--cores must not be negative, got -1\n--all-cores must not be negative, got -1\n--all-nodes (4) must be at least --nodes (5)"},
		{name: "params and configmap", args: []string{"--params", `{}`, "--configmap", "x", "--nodes", "1", "--cores", "1"}, errorHas: "exactly one of --params and --configmap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, err := runSplit(t, tt.stdin, append([]string{"proportional", "replicas", "-o", "json"}, tt.args...)...)
			if tt.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errorHas) {
					t.Fatalf("error %v, want one containing %q", err, tt.errorHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if want := fmt.Sprintf("{\"replicas\":%d}\n", tt.want); out != want {
				t.Errorf("stdout %q, want %q", out, want)
			}
			if !strings.Contains(stderr, tt.warning) || (tt.warning == "") != (stderr == "") {
				t.Errorf("stderr %q, want %q", stderr, tt.warning)
			}
		})
	}
}

// The calculator agrees with the package on a grid of clusters, for params
// given in each of the accepted forms.
func TestProportionalReplicasMatchesPackage(t *testing.T) {
	params := map[string]string{
		"linear": `{"coresPerReplica": 7.3, "nodesPerReplica": 2.5, "min": 2, "max": 40, "preventSinglePointFailure": true}`,
		"ladder": `{"coresToReplicas": [[64,3],[1,1],[512,5]], "nodesToReplicas": [[0,0],[2,2],[9,4]], "includeUnschedulableNodes": true}`,
	}
	for mode, raw := range params {
		p, err := proportional.ParseJSON(mode, []byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []proportional.ClusterSize{{}, {Nodes: 3, Cores: 12, SchedulableNodes: 1, SchedulableCores: 4}, {Nodes: 40, Cores: 600, SchedulableNodes: 38, SchedulableCores: 570}} {
			args := []string{"proportional", "replicas", "-o", "json", "--mode", mode, "--params", raw,
				"--nodes", fmt.Sprint(size.SchedulableNodes), "--cores", fmt.Sprint(size.SchedulableCores),
				"--all-nodes", fmt.Sprint(size.Nodes), "--all-cores", fmt.Sprint(size.Cores)}
			out, _, err := runSplit(t, "", args...)
			var got struct{ Replicas int32 }
			if err != nil || json.Unmarshal([]byte(out), &got) != nil {
				t.Fatalf("%v: %v %q", args, err, out)
			}
			if want := proportional.Replicas(p, size); got.Replicas != want {
				t.Errorf("%s on %+v: CLI %d, package %d", mode, size, got.Replicas, want)
			}
		}
	}
}

func TestProportionalReplicasText(t *testing.T) {
	out, _, err := runSplit(t, "", "proportional", "replicas", "--params",
		`{"ladder":{"coresToReplicas":[[512,5],[1,1],[64,3]],"nodesToReplicas":[[1,1],[2,2]]}}`, "--nodes", "100", "--cores", "400")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"replicas: 3\n",
		"ladder mode, schedulable nodes and cores: 100 nodes, 400 cores",
		"cores: 3 (coresToReplicas[2] [64 3]: the largest threshold not above 400)  <- wins",
		"nodes: 2 (nodesToReplicas[1] [2 2]: the largest threshold not above 100)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
