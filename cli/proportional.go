package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

func newProportionalCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proportional",
		Short: "cluster-proportional-autoscaler's linear and ladder modes: compute replicas, migrate a CPA Deployment",
	}
	cmd.AddCommand(newReplicasCommand(), newFromCPACommand())
	return cmd
}

type replicasOptions struct {
	params, mode, configMap string
	nodes, cores            int
	allNodes, allCores      int
	output                  string
}

func newReplicasCommand() *cobra.Command {
	var o replicasOptions
	cmd := &cobra.Command{
		Use:   "replicas --params JSON --nodes N --cores C",
		Short: "Print the replicas cluster-proportional-autoscaler sets for a cluster of a given size",
		Long: `replicas prints exactly the replica count cluster-proportional-autoscaler (CPA) v1.10
sets for the params and cluster size given, its quirks included.

Params are CPA's JSON, in one of three forms:
  --params '{"linear": {...}}'            the ConfigMap's data as one object: exactly one
                                          key, linear or ladder, its value read verbatim
  --params '{...}' --mode linear|ladder   the value of the ConfigMap's key alone
  --configmap FILE                        a ConfigMap manifest (YAML or JSON)

--nodes and --cores are the schedulable nodes (not cordoned, Ready) and their
allocatable cores rounded up; --all-nodes and --all-cores count every node, for
params with includeUnschedulableNodes (they default to --nodes and --cores).

Params CPA rejects are an error (non-zero exit). Params CPA accepts but that do
harm (a ladder giving 0 replicas for every cluster, a malformed ladder row, values
past int32) give CPA's answer and a warning on stderr; an Autoscaler rejects them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplicas(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.params, "params", "", `CPA params JSON: {"linear": {...}} or {"ladder": {...}}, or the inner object with --mode`)
	f.StringVar(&o.mode, "mode", "", "linear or ladder: --params is the value of that ConfigMap key")
	f.StringVar(&o.configMap, "configmap", "", "read the params from a CPA ConfigMap manifest file ('-': stdin)")
	f.IntVar(&o.nodes, "nodes", 0, "schedulable nodes (required)")
	f.IntVar(&o.cores, "cores", 0, "allocatable cores of the schedulable nodes, rounded up (required)")
	f.IntVar(&o.allNodes, "all-nodes", 0, "all nodes, cordoned and NotReady included (default --nodes)")
	f.IntVar(&o.allCores, "all-cores", 0, "allocatable cores of all nodes, rounded up (default --cores)")
	f.StringVarP(&o.output, "output", "o", "text", `output format: text or json ({"replicas": R})`)
	_ = cmd.MarkFlagRequired("nodes")
	_ = cmd.MarkFlagRequired("cores")
	return cmd
}

func runReplicas(cmd *cobra.Command, o replicasOptions) error {
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output must be text or json, not %q", o.output)
	}
	if !cmd.Flags().Changed("all-nodes") {
		o.allNodes = o.nodes
	}
	if !cmd.Flags().Changed("all-cores") {
		o.allCores = o.cores
	}
	size := proportional.ClusterSize{Nodes: o.allNodes, Cores: o.allCores, SchedulableNodes: o.nodes, SchedulableCores: o.cores}
	if err := checkSize(size); err != nil {
		return err
	}
	p, err := readParams(cmd.InOrStdin(), o)
	if err != nil {
		return errorLines(err)
	}
	e := proportional.Explain(p, size)
	stderr := cmd.ErrOrStderr()
	printFieldWarnings(stderr, proportional.Hazards(p, nil))
	printFieldWarnings(stderr, proportional.Warnings(p, nil))
	if e.Saturated {
		fmt.Fprintf(stderr, "warning: the %s term asks for %d replicas, more than an int32 holds: CPA's conversion wraps it around; %d shown\n",
			e.Winner, winningTerm(e).Replicas, e.Replicas)
	}
	if o.output == "json" {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(struct {
			Replicas int32 `json:"replicas"`
		}{e.Replicas})
	}
	printExplanation(cmd.OutOrStdout(), p, e)
	return nil
}

// errorLines puts each error of an aggregate (every problem of the params)
// on its own line.
func errorLines(err error) error {
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) || len(agg.Errors()) < 2 {
		return err
	}
	lines := make([]string, len(agg.Errors()))
	for i, e := range agg.Errors() {
		lines[i] = "  " + e.Error()
	}
	return fmt.Errorf("the params are invalid (CPA rejects them):\n%s", strings.Join(lines, "\n"))
}

func checkSize(s proportional.ClusterSize) error {
	var errs []error
	for _, c := range []struct {
		flag  string
		value int
	}{{"--nodes", s.SchedulableNodes}, {"--cores", s.SchedulableCores}, {"--all-nodes", s.Nodes}, {"--all-cores", s.Cores}} {
		if c.value < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %d", c.flag, c.value))
		}
	}
	if s.Nodes < s.SchedulableNodes {
		errs = append(errs, fmt.Errorf("--all-nodes (%d) must be at least --nodes (%d)", s.Nodes, s.SchedulableNodes))
	}
	if s.Cores < s.SchedulableCores {
		errs = append(errs, fmt.Errorf("--all-cores (%d) must be at least --cores (%d)", s.Cores, s.SchedulableCores))
	}
	return errors.Join(errs...)
}

// readParams reads the params from --params (with or without --mode) or
// --configmap; exactly one of the two must be given.
func readParams(stdin io.Reader, o replicasOptions) (proportional.Params, error) {
	switch {
	case (o.params == "") == (o.configMap == ""):
		return proportional.Params{}, errors.New("give exactly one of --params and --configmap")
	case o.configMap != "":
		if o.mode != "" {
			return proportional.Params{}, errors.New("--mode goes with --params, not --configmap (the ConfigMap's key names the mode)")
		}
		return readConfigMapFile(stdin, o.configMap)
	case o.mode != "":
		return proportional.ParseJSON(o.mode, []byte(o.params))
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal([]byte(o.params), &data); err != nil {
		return proportional.Params{}, fmt.Errorf(`--params: want {"linear": {...}} or {"ladder": {...}} (or the inner object with --mode): %w`, err)
	}
	strs := make(map[string]string, len(data))
	for k, v := range data {
		strs[k] = string(v)
	}
	return proportional.ParseConfigMap(strs, "")
}

func readConfigMapFile(stdin io.Reader, path string) (proportional.Params, error) {
	raw, err := readInput(stdin, path)
	if err != nil {
		return proportional.Params{}, err
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(raw, &cm); err != nil {
		return proportional.Params{}, fmt.Errorf("%s: not a ConfigMap: %w", path, err)
	}
	if cm.Kind != "ConfigMap" {
		return proportional.Params{}, fmt.Errorf("%s: kind is %q, want ConfigMap", path, cm.Kind)
	}
	p, err := proportional.ParseConfigMap(cm.Data, "")
	if err != nil {
		return proportional.Params{}, fmt.Errorf("ConfigMap %s: %w", cm.Name, err)
	}
	return p, nil
}

// maxInput bounds what is read from a file or stdin.
const maxInput = 16 << 20

func readInput(stdin io.Reader, path string) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(raw) > maxInput {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxInput>>20)
	}
	return raw, nil
}

func printFieldWarnings(w io.Writer, errs field.ErrorList) {
	for _, e := range errs {
		fmt.Fprintf(w, "warning: %s\n", strings.TrimPrefix(e.Error(), "<nil>."))
	}
}

func winningTerm(e proportional.Explanation) proportional.Term {
	if e.Winner == proportional.TermCores {
		return e.Cores
	}
	return e.Nodes
}

func printExplanation(w io.Writer, p proportional.Params, e proportional.Explanation) {
	which := "schedulable"
	if e.IncludeUnschedulableNodes {
		which = "all"
	}
	fmt.Fprintf(w, "replicas: %d\n%s mode, %s nodes and cores: %d nodes, %d cores\n", e.Replicas, e.Mode, which, e.Nodes.Count, e.Cores.Count)
	for _, t := range []struct {
		name string
		term proportional.Term
		rows [][]int
	}{{proportional.TermCores, e.Cores, ladderRows(p, true)}, {proportional.TermNodes, e.Nodes, ladderRows(p, false)}} {
		mark := ""
		switch {
		case t.name == e.Winner && e.Cores.Replicas == e.Nodes.Replicas:
			mark = "  <- wins (a tie: CPA takes nodes)"
		case t.name == e.Winner:
			mark = "  <- wins"
		}
		fmt.Fprintf(w, "  %s: %d (%s)%s\n", t.name, t.term.Replicas, describeTerm(t.name, t.term, t.rows), mark)
	}
}

func ladderRows(p proportional.Params, cores bool) [][]int {
	switch {
	case p.Ladder == nil:
		return nil
	case cores:
		return p.Ladder.CoresToReplicas
	}
	return p.Ladder.NodesToReplicas
}

func describeTerm(name string, t proportional.Term, rows [][]int) string {
	per := map[string]string{proportional.TermCores: "coresPerReplica", proportional.TermNodes: "nodesPerReplica"}[name]
	list := name + "ToReplicas"
	switch t.Rule {
	case proportional.RuleNoPerReplica:
		return per + " is 0: 1, min not applied"
	case proportional.RuleCeil:
		return fmt.Sprintf("ceil(%d / %g) = %g", t.Count, t.PerReplica, t.Ceil)
	case proportional.RuleMax:
		return fmt.Sprintf("ceil(%d / %g) = %g, lowered to max", t.Count, t.PerReplica, t.Ceil)
	case proportional.RuleMin:
		return fmt.Sprintf("ceil(%d / %g) = %g, raised to min", t.Count, t.PerReplica, t.Ceil)
	case proportional.RuleSinglePointFailure:
		return "preventSinglePointFailure: at least 2 on more than one node, even above max"
	case proportional.RuleStep:
		return fmt.Sprintf("%s[%d] %v: the largest threshold not above %d", list, t.Step, rows[t.Step], t.Count)
	case proportional.RuleBelowFirstStep:
		return fmt.Sprintf("%s[%d] %v: %d is below every threshold, the first step applies", list, t.Step, rows[t.Step], t.Count)
	case proportional.RuleEmptyList:
		return list + " is empty: 0"
	}
	return string(t.Rule)
}
