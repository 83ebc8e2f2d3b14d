package controller

import (
	"fmt"
	"math"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/decision"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
	"github.com/ebbflow/ebbflow/autoscaler/record"
)

// ConditionProportionalParams reports whether the parameters of the
// ClusterProportional metrics are valid (set when a metric reads a ConfigMap
// or its parameters are invalid).
const ConditionProportionalParams autoscalingv2.HorizontalPodAutoscalerConditionType = "ProportionalParams"

// ProportionalSource is a ClusterProportional metric of an Autoscaler and its
// position in spec.metrics.
type ProportionalSource struct {
	Index  int
	Source v1alpha1.ClusterProportionalSource
}

// proportionalReading is what observe read for one ClusterProportional
// metric: its parameters and the size of the cluster they apply to.
type proportionalReading struct {
	src    ProportionalSource
	params proportional.Params
	size   proportional.ClusterSize
	err    error
}

// observeProportional reads every ClusterProportional metric: the
// parameters (inline or from the referenced ConfigMap, keeping the last good
// ones when it breaks) and the node counts, and records what the object
// depends on so that node and ConfigMap events evaluate it at once.
func (ev *evaluation) observeProportional() []proportionalReading {
	srcs := ev.obj.Proportional
	var u usage
	out := make([]proportionalReading, len(srcs))
	sels := make([]labels.Selector, len(srcs))
	for i, src := range srcs {
		out[i].src = src
		sel, err := selectorOf(&src.Source)
		if err != nil {
			out[i].err = fmt.Errorf("invalid nodeSelector: %w", err)
			continue
		}
		sels[i] = sel
		u.selectors = append(u.selectors, sel)
		if ref := src.Source.ConfigMapRef; ref != nil {
			u.configMaps = append(u.configMaps, ev.obj.Namespace+"/"+ref.Name)
		}
	}
	// Depend first, read second: a node or ConfigMap event after the
	// reads below finds this object among the dependants and evaluates it
	// again (read first, an event between the reads and use was lost until
	// the next sync period, and a new selector's nodes were counted twice).
	ev.c.cluster.use(ev.key, u)
	var problems []string
	for i, src := range srcs {
		if out[i].err != nil {
			continue
		}
		sel := sels[i]
		var problem string
		out[i].params, problem, out[i].err = ev.proportionalParams(src)
		if problem != "" {
			problems = append(problems, problem)
		}
		if out[i].err == nil {
			out[i].size, out[i].err = ev.c.cluster.size(sel)
		}
	}
	ev.proportionalCondition(srcs, problems)
	return out
}

// proportionalCondition reports the parameters' problems (a Warning event
// each) in the ProportionalParams condition.
func (ev *evaluation) proportionalCondition(srcs []ProportionalSource, problems []string) {
	if len(problems) > 0 {
		msg := strings.Join(problems, "; ")
		ev.warn("InvalidProportionalParams", msg)
		ev.set(condition(ConditionProportionalParams, corev1.ConditionFalse, "InvalidParams", msg))
		return
	}
	for _, s := range srcs {
		if s.Source.ConfigMapRef != nil || hasCondition(ev.obj.Status, ConditionProportionalParams) {
			ev.set(condition(ConditionProportionalParams, corev1.ConditionTrue, "ParamsValid", "the cluster-proportional parameters are valid"))
			return
		}
	}
}

// proportionalParams returns the metric's parameters. A problem with a
// ConfigMap (missing, invalid) keeps the last good parameters and is
// returned as problem; err is set when there are no usable parameters.
func (ev *evaluation) proportionalParams(src ProportionalSource) (p proportional.Params, problem string, err error) {
	path := field.NewPath("spec", "metrics").Index(src.Index).Child("clusterProportional")
	s := src.Source
	if s.ConfigMapRef == nil {
		p = paramsOf(&s)
		if errs := append(proportional.Validate(p, path), proportional.Hazards(p, path)...); len(errs) > 0 {
			return p, errs.ToAggregate().Error(), errs.ToAggregate()
		}
		return p, "", nil
	}
	ref := s.ConfigMapRef
	data, exists, cmErr := ev.c.cluster.configMapData(ev.obj.Namespace, ref.Name)
	switch {
	case cmErr != nil:
		problem = fmt.Sprintf("ConfigMap %s/%s: %v", ev.obj.Namespace, ref.Name, cmErr)
	case !exists:
		problem = fmt.Sprintf("ConfigMap %s/%s not found", ev.obj.Namespace, ref.Name)
	default:
		p, err = proportional.ParseConfigMap(data, ref.Key)
		if err == nil {
			cmPath := field.NewPath("configMap", ref.Name, "data")
			if errs := append(proportional.Validate(p, cmPath), proportional.Hazards(p, cmPath)...); len(errs) > 0 {
				err = errs.ToAggregate()
			}
		}
		if err == nil {
			ev.hist.proportional = setParams(ev.hist.proportional, ref.Name+"/"+ref.Key, p)
			return p, "", nil
		}
		problem = fmt.Sprintf("ConfigMap %s/%s: %v", ev.obj.Namespace, ref.Name, err)
	}
	if last, ok := ev.hist.proportional[ref.Name+"/"+ref.Key]; ok {
		return last, problem + " (keeping the last good parameters)", nil
	}
	return proportional.Params{}, problem, fmt.Errorf("no usable cluster-proportional parameters: %s", problem)
}

func setParams(m map[string]proportional.Params, i string, p proportional.Params) map[string]proportional.Params {
	if m == nil {
		m = map[string]proportional.Params{}
	}
	m[i] = p
	return m
}

// paramsOf converts inline API parameters to CPA's.
func paramsOf(s *v1alpha1.ClusterProportionalSource) proportional.Params {
	var p proportional.Params
	if l := s.Linear; l != nil {
		p.Linear = &proportional.Linear{
			CoresPerReplica: l.CoresPerReplica, NodesPerReplica: l.NodesPerReplica,
			Min: int(l.Min), Max: int(l.Max),
			PreventSinglePointFailure: l.PreventSinglePointFailure, IncludeUnschedulableNodes: l.IncludeUnschedulableNodes,
		}
	}
	if l := s.Ladder; l != nil {
		p.Ladder = &proportional.Ladder{CoresToReplicas: rows(l.CoresToReplicas), NodesToReplicas: rows(l.NodesToReplicas),
			IncludeUnschedulableNodes: l.IncludeUnschedulableNodes}
	}
	return p
}

func rows(in [][]int64) [][]int {
	if in == nil {
		return nil
	}
	out := make([][]int, len(in))
	for i, r := range in {
		out[i] = make([]int, len(r))
		for j, v := range r {
			out[i][j] = int(v)
		}
	}
	return out
}

// proposeProportional turns the readings into proposals and record entries
// (pure). The proposals combine with the other metrics' by maximum.
func proposeProportional(readings []proportionalReading, now time.Time) ([]decision.Proposal, []record.Metric, map[int]v1alpha1.ClusterProportionalStatus) {
	props := make([]decision.Proposal, len(readings))
	recs := make([]record.Metric, len(readings))
	var statuses map[int]v1alpha1.ClusterProportionalStatus
	for i, r := range readings {
		spec := autoscalingv2.MetricSpec{Type: v1alpha1.ClusterProportionalMetricSourceType}
		name := "cluster-proportional " + r.params.Mode()
		if sel := r.src.Source.NodeSelector; sel != nil {
			if s, err := selectorOf(&r.src.Source); err == nil && s.String() != labels.Everything().String() {
				name += " (nodes " + s.String() + ")"
			}
		}
		if r.err != nil {
			props[i] = decision.Proposal{Err: r.err, Condition: condition(autoscalingv2.ScalingActive, corev1.ConditionFalse,
				"FailedGetClusterProportional", failurePrefix+r.err.Error())}
		} else {
			e := proportional.Explain(r.params, r.size)
			props[i] = decision.Proposal{Metric: name, Replicas: e.Replicas, Timestamp: now}
			if statuses == nil {
				statuses = map[int]v1alpha1.ClusterProportionalStatus{}
			}
			statuses[r.src.Index] = v1alpha1.ClusterProportionalStatus{
				Nodes: clamp32(r.size.Nodes), Cores: clamp32(r.size.Cores),
				SchedulableNodes: clamp32(r.size.SchedulableNodes), SchedulableCores: clamp32(r.size.SchedulableCores),
				Replicas: e.Replicas,
			}
			recs[i].Reason = fmt.Sprintf("%d nodes, %d cores (%d and %d schedulable): %s",
				r.size.Nodes, r.size.Cores, r.size.SchedulableNodes, r.size.SchedulableCores, e.String())
		}
		recs[i].Name = name
		recs[i].Reading = decision.Reading{Spec: spec, Timestamp: now}
		recs[i].Evaluated = decision.Evaluated{Proposal: props[i]}
	}
	return props, recs, statuses
}

func clamp32(v int) int32 { return int32(min(v, math.MaxInt32)) }
