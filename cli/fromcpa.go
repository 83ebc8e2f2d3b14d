package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

// defaultUnboundedMax is maxReplicas for CPA params without a maximum
// (linear, max 0). Kubernetes supports at most 150,000 pods per cluster, so
// no count a cluster can run is clamped by it.
const defaultUnboundedMax = 1_000_000

type fromCPAOptions struct {
	file         string
	flags        cpaConfig
	params       string
	name         string
	maxReplicas  int32
	configMapRef bool
}

func newFromCPACommand() *cobra.Command {
	var o fromCPAOptions
	cmd := &cobra.Command{
		Use:   "from-cpa (-f FILE | --target KIND/NAME --configmap NAME --namespace NS [--default-params JSON] [--nodelabels SELECTOR])",
		Short: "Convert a cluster-proportional-autoscaler Deployment into Autoscaler manifests",
		Long: `from-cpa writes, on stdout, one Autoscaler per target of a cluster-proportional-autoscaler
(CPA) Deployment, which sets the same replicas as CPA on the same cluster.

Input: -f FILE ('-': stdin), YAML or JSON documents or a List (kubectl get -o yaml),
holding the CPA Deployment(s) (a container whose command or args set --target) and,
optionally, CPA's ConfigMap; or CPA's flags given directly. Flags given with -f
override the Deployment's.

Params: each Autoscaler reads CPA's ConfigMap (configMapRef), so that editing it
keeps working; --configmap-ref=false writes the params inline instead. The params
converted, checked, and used for the bounds are those of the ConfigMap when the
input holds it (what CPA reads when it exists), else those of --default-params
(what CPA creates the ConfigMap from).

minReplicas and maxReplicas are the lowest and highest counts the params can
give, so that they never clamp CPA's answer (maxReplicas is --max-replicas when
the params have no maximum; minReplicas is at least 1). With configMapRef, an
edit of the ConfigMap beyond these bounds is clamped by them: change them too. behavior lets every change through at once, as CPA
resizes at once: no stabilization window, a scale-up policy of maxReplicas pods
and a scale-down policy of 100% per second.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFromCPA(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "manifests holding the CPA Deployment and optionally its ConfigMap ('-': stdin)")
	f.StringVar(&o.flags.target, "target", "", "CPA's --target: KIND/NAME[,KIND/NAME...] (deployment, replicaset, replicationcontroller)")
	f.StringVar(&o.flags.configMap, "configmap", "", "CPA's --configmap: the ConfigMap holding the params")
	f.StringVar(&o.flags.namespace, "namespace", "", "CPA's --namespace: the namespace of the targets and the ConfigMap")
	f.StringVar(&o.params, "default-params", "", `CPA's --default-params: {"linear": {...}} or {"ladder": {...}}`)
	f.StringVar(&o.flags.nodeLabels, "nodelabels", "", "CPA's --nodelabels: a label selector of the nodes to count")
	f.StringVar(&o.name, "name", "", "name of the Autoscaler (default: the target's name; one target only)")
	f.Int32Var(&o.maxReplicas, "max-replicas", defaultUnboundedMax, "maxReplicas when CPA's params set no maximum (linear max 0)")
	f.BoolVar(&o.configMapRef, "configmap-ref", true, "read the params from CPA's ConfigMap (clusterProportional.configMapRef); false: write them inline")
	return cmd
}

func runFromCPA(cmd *cobra.Command, o fromCPAOptions) error {
	if o.maxReplicas < 1 {
		return fmt.Errorf("--max-replicas must be at least 1, got %d", o.maxReplicas)
	}
	if cmd.Flags().Changed("default-params") {
		o.flags.defaultParams = &o.params
	}
	configs, configMaps, err := fromCPAInput(cmd, o)
	if err != nil {
		return err
	}
	if o.name != "" && (len(configs) != 1 || strings.Contains(configs[0].target, ",")) {
		return errors.New("--name needs exactly one target")
	}
	var docs []string
	for _, cfg := range configs {
		manifests, err := convertCPA(cmd.ErrOrStderr(), cfg, configMaps, o)
		if err != nil {
			return fmt.Errorf("%s: %w", cfg.source, err)
		}
		for _, m := range manifests {
			out, err := yaml.Marshal(m)
			if err != nil {
				return err
			}
			docs = append(docs, string(out))
		}
	}
	_, err = io.WriteString(cmd.OutOrStdout(), strings.Join(docs, "---\n"))
	return err
}

// fromCPAInput gathers the CPA configurations: from the Deployments of -f,
// with the flags given overriding theirs, or from the flags alone.
func fromCPAInput(cmd *cobra.Command, o fromCPAOptions) ([]cpaConfig, []corev1.ConfigMap, error) {
	if o.file == "" {
		c := o.flags
		c.source = "flags"
		return []cpaConfig{c}, nil, nil
	}
	raw, err := readInput(cmd.InOrStdin(), o.file)
	if err != nil {
		return nil, nil, err
	}
	in, err := readManifests(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", o.file, err)
	}
	configs := cpaConfigs(in.deployments)
	if len(configs) == 0 {
		return nil, nil, fmt.Errorf("%s: no Deployment runs cluster-proportional-autoscaler (no container sets --target)", o.file)
	}
	set := cmd.Flags().Changed
	for i := range configs {
		c := &configs[i]
		for _, f := range []struct {
			name string
			dst  *string
			src  string
		}{{"target", &c.target, o.flags.target}, {"configmap", &c.configMap, o.flags.configMap},
			{"namespace", &c.namespace, o.flags.namespace}, {"nodelabels", &c.nodeLabels, o.flags.nodeLabels}} {
			if set(f.name) {
				*f.dst = f.src
			}
		}
		if o.flags.defaultParams != nil {
			c.defaultParams = o.flags.defaultParams
		}
	}
	return configs, in.configMaps, nil
}

// convertCPA turns one CPA configuration into one Autoscaler per target,
// writing notes on what changes to w.
func convertCPA(w io.Writer, c cpaConfig, configMaps []corev1.ConfigMap, o fromCPAOptions) ([]autoscalerManifest, error) {
	var missing []string
	for _, f := range []struct{ flag, value string }{{"--target", c.target}, {"--configmap", c.configMap}, {"--namespace", c.namespace}} {
		if f.value == "" {
			missing = append(missing, f.flag)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s not set (CPA requires them too; --namespace may come from MY_POD_NAMESPACE)", strings.Join(missing, ", "))
	}
	for _, flag := range c.ignored {
		fmt.Fprintf(w, "note: %s: %s has no equivalent: an Autoscaler watches nodes and reacts to each change\n", c.source, flag)
	}
	p, err := cpaParams(w, &c, configMaps)
	if err != nil {
		return nil, err
	}
	if errs := proportional.Hazards(p, nil); len(errs) > 0 {
		return nil, fmt.Errorf("the params have hazards an Autoscaler rejects (fix them first; CPA applies them silently): %w", errs.ToAggregate())
	}
	for _, warning := range proportional.Warnings(p, nil) {
		fmt.Fprintf(w, "warning: %s: %s\n", c.source, warning.Error())
	}
	targets, err := parseTargets(w, c.target)
	if err != nil {
		return nil, err
	}
	source := clusterProportionalSource{}
	switch {
	case o.configMapRef:
		// The API takes exactly one of linear, ladder and configMapRef.
		source.ConfigMapRef = &configMapRef{Name: c.configMap}
		if !c.configMapInInput {
			fmt.Fprintf(w, "note: %s: the Autoscaler reads ConfigMap %s, which must exist (CPA creates it from --default-params, Ebbflow does not); --configmap-ref=false writes the params inline instead\n",
				c.source, qualified(c.namespace, c.configMap))
		}
	case p.Linear != nil:
		l := *p.Linear
		l.Min, _, _ = proportional.Range(p) // CPA's min: 0 means 1; written out
		source.Linear = &l
	case p.Ladder != nil:
		source.Ladder = normalizedLadder(*p.Ladder)
	}
	if c.nodeLabels != "" {
		sel, err := metav1.ParseToLabelSelector(c.nodeLabels)
		if err != nil {
			return nil, fmt.Errorf("--nodelabels %q: %w", c.nodeLabels, err)
		}
		source.NodeSelector = sel
	}
	lo, hi, err := replicaBounds(w, c, p, o.maxReplicas)
	if err != nil {
		return nil, err
	}
	out := make([]autoscalerManifest, 0, len(targets))
	names := map[string]bool{}
	for _, t := range targets {
		name := t.ref.Name
		if o.name != "" {
			name = o.name
		}
		if names[name] {
			name += "-" + strings.ToLower(t.ref.Kind)
		}
		names[name] = true
		out = append(out, newManifest(name, c.namespace, t.ref, lo, hi, source))
	}
	return out, nil
}

// cpaParams are the params CPA uses: its ConfigMap's when it exists (here:
// when the input holds it), else --default-params'.
func cpaParams(w io.Writer, c *cpaConfig, configMaps []corev1.ConfigMap) (proportional.Params, error) {
	for _, cm := range configMaps {
		if cm.Name != c.configMap || (cm.Namespace != "" && cm.Namespace != c.namespace) {
			continue
		}
		c.configMapInInput = true
		if c.defaultParams != nil {
			fmt.Fprintf(w, "note: %s: ConfigMap %s exists: its params are used, not --default-params (as CPA does)\n", c.source, cm.Name)
		}
		p, err := proportional.ParseConfigMap(cm.Data, "")
		if err != nil {
			return p, fmt.Errorf("ConfigMap %s is invalid (CPA rejects it too and does not scale): %w", qualified(c.namespace, cm.Name), err)
		}
		return p, nil
	}
	if c.defaultParams == nil {
		return proportional.Params{}, fmt.Errorf("no params: give CPA's ConfigMap %s in the input (kubectl get -n %s deployment/NAME configmap/%s -o yaml | ebbflow proportional from-cpa -f -) or --default-params",
			c.configMap, c.namespace, c.configMap)
	}
	data, err := proportional.DefaultParamsData(*c.defaultParams)
	if err != nil {
		return proportional.Params{}, err
	}
	p, err := proportional.ParseConfigMap(data, "")
	if err != nil {
		return p, fmt.Errorf("--default-params (CPA would create a ConfigMap it then rejects): %w", err)
	}
	return p, nil
}

// replicaBounds chooses minReplicas and maxReplicas from the range of the
// params so that neither ever clamps CPA's answer.
func replicaBounds(w io.Writer, c cpaConfig, p proportional.Params, unbounded int32) (lo, hi int32, err error) {
	l, h, bounded := proportional.Range(p)
	if !bounded {
		h = int(unbounded)
		fmt.Fprintf(w, "note: %s: CPA's params set no maximum: maxReplicas is %d (--max-replicas)\n", c.source, unbounded)
	}
	if l > h {
		return 0, 0, fmt.Errorf("--max-replicas %d is below the params' min %d", unbounded, l)
	}
	if l == 0 {
		// An Autoscaler scales to zero only through an Object or External
		// metric's activation (spec.scaleToZero).
		fmt.Fprintf(w, "warning: %s: the ladder gives 0 replicas on some clusters, where CPA scales the target to zero; the Autoscaler keeps minReplicas 1 there\n", c.source)
		l = 1
	}
	// Range is within int32: Hazards rejected larger values.
	return int32(l), int32(max(h, l)), nil
}

// normalizedLadder writes each row as the [threshold, replicas] CPA reads.
func normalizedLadder(l proportional.Ladder) *proportional.Ladder {
	norm := func(rows [][]int) [][]int {
		out := make([][]int, len(rows))
		for i, r := range rows {
			out[i] = []int{0, 0}
			copy(out[i], r)
		}
		return out
	}
	return &proportional.Ladder{
		CoresToReplicas:           norm(l.CoresToReplicas),
		NodesToReplicas:           norm(l.NodesToReplicas),
		IncludeUnschedulableNodes: l.IncludeUnschedulableNodes,
	}
}

type cpaTarget struct {
	ref autoscalingv2.CrossVersionObjectReference
}

// parseTargets reads CPA's --target as CPA does (lower-cased, comma-separated
// KIND/NAME) into scale target references.
func parseTargets(w io.Writer, target string) ([]cpaTarget, error) {
	kinds := map[string]autoscalingv2.CrossVersionObjectReference{
		"deployment":            {APIVersion: "apps/v1", Kind: "Deployment"},
		"replicaset":            {APIVersion: "apps/v1", Kind: "ReplicaSet"},
		"replicationcontroller": {APIVersion: "v1", Kind: "ReplicationController"},
		"statefulset":           {APIVersion: "apps/v1", Kind: "StatefulSet"},
	}
	var out []cpaTarget
	for _, t := range strings.Split(strings.ToLower(target), ",") {
		kind, name, ok := strings.Cut(strings.TrimSpace(t), "/")
		if !ok || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("--target %q: want KIND/NAME[,KIND/NAME...]", target)
		}
		ref, known := kinds[strings.TrimSuffix(kind, "s")]
		if !known {
			return nil, fmt.Errorf("--target %q: kind %q is not one CPA scales (deployment, replicaset, replicationcontroller)", target, kind)
		}
		if kind != "deployment" && kind != "replicaset" && kind != "replicationcontroller" {
			fmt.Fprintf(w, "note: CPA's flag check refuses target kind %q; converted anyway\n", kind)
		}
		ref.Name = name
		out = append(out, cpaTarget{ref: ref})
	}
	return out, nil
}

// The Autoscaler manifest written: plain structs of the
// autoscaling.ebbflow.dev/v1alpha1 shape.
type autoscalerManifest struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   objectMeta     `json:"metadata"`
	Spec       autoscalerSpec `json:"spec"`
}

type objectMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

type autoscalerSpec struct {
	ScaleTargetRef autoscalingv2.CrossVersionObjectReference      `json:"scaleTargetRef"`
	MinReplicas    int32                                          `json:"minReplicas"`
	MaxReplicas    int32                                          `json:"maxReplicas"`
	Metrics        []proportionalMetric                           `json:"metrics"`
	Behavior       *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior"`
}

type proportionalMetric struct {
	Type                string                    `json:"type"`
	ClusterProportional clusterProportionalSource `json:"clusterProportional"`
}

type clusterProportionalSource struct {
	Linear       *proportional.Linear  `json:"linear,omitempty"`
	Ladder       *proportional.Ladder  `json:"ladder,omitempty"`
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	ConfigMapRef *configMapRef         `json:"configMapRef,omitempty"`
}

type configMapRef struct {
	Name string `json:"name"`
	Key  string `json:"key,omitempty"`
}

func newManifest(name, namespace string, ref autoscalingv2.CrossVersionObjectReference, lo, hi int32, source clusterProportionalSource) autoscalerManifest {
	return autoscalerManifest{
		APIVersion: "autoscaling.ebbflow.dev/v1alpha1",
		Kind:       "Autoscaler",
		Metadata:   objectMeta{Name: name, Namespace: namespace},
		Spec: autoscalerSpec{
			ScaleTargetRef: ref,
			MinReplicas:    lo,
			MaxReplicas:    hi,
			Metrics:        []proportionalMetric{{Type: "ClusterProportional", ClusterProportional: source}},
			Behavior:       immediateBehavior(hi),
		},
	}
}

// immediateBehavior lets any change within [minReplicas, maxReplicas]
// through at once, as CPA resizes: no stabilization; scaling up, a policy of
// maxReplicas pods (from any count >= 0 it reaches maxReplicas); scaling
// down, 100% (it reaches 0). The period is the shortest allowed; it does not
// matter since the limits never bind. Safe while current replicas +
// maxReplicas fit in an int32.
func immediateBehavior(maxReplicas int32) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	zero, selectMax := int32(0), autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: &zero,
			SelectPolicy:               &selectMax,
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: maxReplicas, PeriodSeconds: 1}},
		},
		ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: &zero,
			SelectPolicy:               &selectMax,
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 1}},
		},
	}
}
