package evaluation

import (
	"fmt"
	"math"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
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

// ProportionalReading is what was read for one ClusterProportional metric:
// the size of the cluster its node selector picks and, when it refers to a
// ConfigMap, that ConfigMap's data.
type ProportionalReading struct {
	// SelectorErr is set when the node selector is invalid (nothing else
	// was read).
	SelectorErr error
	// Size is the cluster's size; SizeErr is why it could not be read (no
	// node informer, or its cache not synced within one sync period).
	Size    proportional.ClusterSize
	SizeErr error
	// ConfigMap is the referenced ConfigMap's data (configMapRef only);
	// ConfigMapFound is false when it does not exist, ConfigMapErr set when
	// it could not be read.
	ConfigMap      map[string]string
	ConfigMapFound bool
	ConfigMapErr   error
}

// proportional turns the ClusterProportional readings into proposals (placed
// after the HPA metrics') and metric entries, sets the ProportionalParams
// condition and keeps the last good parameters in the Memory.
func (r *Result) proportional() ([]Proposal, []Metric) {
	in := &r.in
	srcs := in.Spec.Proportional
	props := make([]Proposal, len(srcs))
	recs := make([]Metric, len(srcs))
	var problems []string
	for i, src := range srcs {
		rd := ProportionalReading{SelectorErr: fmt.Errorf("spec.metrics[%d] was not read", src.Index)}
		if i < len(in.Proportional) {
			rd = in.Proportional[i]
		}
		var params proportional.Params
		err := rd.SelectorErr
		if err == nil {
			var problem string
			params, problem, err = r.proportionalParams(src, rd)
			if problem != "" {
				problems = append(problems, problem)
			}
			if err == nil {
				err = rd.SizeErr
			}
		}
		name := "cluster-proportional " + params.Mode()
		if src.Source.NodeSelector != nil {
			if s, err := NodeSelector(&src.Source); err == nil && !s.Empty() {
				name += " (nodes " + s.String() + ")"
			}
		}
		spec := autoscalingv2.MetricSpec{Type: v1alpha1.ClusterProportionalMetricSourceType}
		if err != nil {
			props[i] = Proposal{Err: err, Condition: condition(autoscalingv2.ScalingActive, corev1.ConditionFalse,
				"FailedGetClusterProportional", failurePrefix+err.Error())}
		} else {
			e := proportional.Explain(params, rd.Size)
			props[i] = Proposal{Metric: name, Replicas: e.Replicas, Timestamp: in.ReadAt}
			if r.propStatus == nil {
				r.propStatus = map[int]v1alpha1.ClusterProportionalStatus{}
			}
			size := rd.Size
			r.propStatus[src.Index] = v1alpha1.ClusterProportionalStatus{
				Nodes: clamp32(size.Nodes), Cores: clamp32(size.Cores),
				SchedulableNodes: clamp32(size.SchedulableNodes), SchedulableCores: clamp32(size.SchedulableCores),
				Replicas: e.Replicas,
			}
			recs[i].Reason = fmt.Sprintf("%d nodes, %d cores (%d and %d schedulable): %s",
				size.Nodes, size.Cores, size.SchedulableNodes, size.SchedulableCores, e.String())
		}
		recs[i].Name = name
		recs[i].Reading = Reading{Spec: spec, Timestamp: in.ReadAt}
		recs[i].Evaluated = Evaluated{Proposal: props[i]}
	}
	r.proportionalCondition(problems)
	return props, recs
}

// proportionalCondition reports the parameters' problems (a Warning event)
// in the ProportionalParams condition.
func (r *Result) proportionalCondition(problems []string) {
	at := r.in.Now
	if len(problems) > 0 {
		msg := strings.Join(problems, "; ")
		r.warn("InvalidProportionalParams", msg)
		r.set(condition(ConditionProportionalParams, corev1.ConditionFalse, "InvalidParams", msg), at)
		return
	}
	for _, s := range r.in.Spec.Proportional {
		if s.Source.ConfigMapRef != nil || hasCondition(r.Status, ConditionProportionalParams) {
			r.set(condition(ConditionProportionalParams, corev1.ConditionTrue, "ParamsValid", "the cluster-proportional parameters are valid"), at)
			return
		}
	}
}

// proportionalParams returns the metric's parameters. A problem with a
// ConfigMap (missing, invalid) keeps the last good parameters and is
// returned as problem; err is set when there are no usable parameters.
func (r *Result) proportionalParams(src ProportionalSource, rd ProportionalReading) (p proportional.Params, problem string, err error) {
	path := field.NewPath("spec", "metrics").Index(src.Index).Child("clusterProportional")
	s := src.Source
	if s.ConfigMapRef == nil {
		p = paramsOf(&s)
		if errs := append(proportional.Validate(p, path), proportional.Hazards(p, path)...); len(errs) > 0 {
			return p, errs.ToAggregate().Error(), errs.ToAggregate()
		}
		return p, "", nil
	}
	ns, ref, h := r.in.Namespace, s.ConfigMapRef, r.in.Memory
	switch {
	case rd.ConfigMapErr != nil:
		problem = fmt.Sprintf("ConfigMap %s/%s: %v", ns, ref.Name, rd.ConfigMapErr)
	case !rd.ConfigMapFound:
		problem = fmt.Sprintf("ConfigMap %s/%s not found", ns, ref.Name)
	default:
		p, err = proportional.ParseConfigMap(rd.ConfigMap, ref.Key)
		if err == nil {
			cmPath := field.NewPath("configMap", ref.Name, "data")
			if errs := append(proportional.Validate(p, cmPath), proportional.Hazards(p, cmPath)...); len(errs) > 0 {
				err = errs.ToAggregate()
			}
		}
		if err == nil {
			if h.Proportional == nil {
				h.Proportional = map[string]proportional.Params{}
			}
			h.Proportional[ref.Name+"/"+ref.Key] = p
			return p, "", nil
		}
		problem = fmt.Sprintf("ConfigMap %s/%s: %v", ns, ref.Name, err)
	}
	if last, ok := h.Proportional[ref.Name+"/"+ref.Key]; ok {
		return last, problem + " (keeping the last good parameters)", nil
	}
	return proportional.Params{}, problem, fmt.Errorf("no usable cluster-proportional parameters: %s", problem)
}

// NodeSelector is the selector of the nodes a ClusterProportional metric
// counts (every node when unset).
func NodeSelector(src *v1alpha1.ClusterProportionalSource) (labels.Selector, error) {
	if src.NodeSelector == nil {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(src.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("invalid nodeSelector: %w", err)
	}
	return sel, nil
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

func clamp32(v int) int32 { return int32(min(v, math.MaxInt32)) }
