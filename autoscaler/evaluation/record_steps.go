package evaluation

import (
	"fmt"
	"math"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// steps lists, in order, the rules that changed the winning proposal.
func steps(in recordInput, messages bool) []v1alpha1.DecisionStep {
	d, cur := in.Decision, in.CurrentReplicas
	var out []v1alpha1.DecisionStep
	add := func(stage string, from, to int32, msg string) {
		s := v1alpha1.DecisionStep{Stage: stage, From: from, To: to}
		if messages {
			s.Message = cut(msg)
		}
		out = append(out, s)
	}
	switch d.Gate.Action {
	case ScalingDisabled:
		add(StageScalingDisabled, cur, cur, "the target has zero replicas and the autoscaler did not scale it to zero")
	case ClampToBounds:
		stage := StageMaxReplicas
		if d.Gate.Desired > cur {
			stage = StageMinReplicas
		}
		add(stage, cur, d.Gate.Desired, d.Gate.Reason)
	}
	if w := winner(in); w != nil {
		if t, ok := toleranceStep(w, cur, messages); ok {
			out = append(out, t)
		}
	}
	if ov := d.Override; ov != nil && d.Aggregate != nil {
		to := ov.Replicas
		if ov.Hold {
			to = cur
		}
		add(ov.Stage, max(d.Aggregate.Replicas, 0), to, ov.Message)
	}
	if d.Aggregate != nil && len(in.Forecasts) > 0 {
		for _, s := range forecastSteps(in.Forecasts, d, max(d.Aggregate.Replicas, 0)) {
			add(s.Stage, s.From, s.To, s.Message)
		}
	}
	if in.Floor != nil && in.Floor.Replicas > 0 && floorUnused(in.Floor, &d) {
		p := max(d.Aggregate.Replicas, 0)
		add(StageSchedule, p, p, in.Floor.message()+": not above what the metrics decide")
	}
	if o := d.Outcome; o != nil && d.Aggregate != nil {
		proposal := max(d.Aggregate.Replicas, 0)
		if d.Override != nil {
			proposal = max(d.Override.Replicas, 0)
		}
		if o.Stabilized != proposal {
			stage := StageScaleDownStabilization
			if o.AbleToScale.Reason == behavior.ReasonScaleUpStabilized {
				stage = StageScaleUpStabilization
			}
			add(stage, proposal, o.Stabilized, o.AbleToScale.Message)
		}
		if o.ScalingLimited.Status == corev1.ConditionTrue {
			msg := ""
			if messages {
				msg = o.ScalingLimited.Message + policies(o.ScalingLimited.Reason, in.Behavior)
			}
			add(limitStage(o.ScalingLimited.Reason, in.Behavior), o.Stabilized, o.Replicas, msg)
		}
		if d.FromZeroFloor {
			add(StageScaleFromZero, o.Replicas, d.Desired, "scaling up from zero replicas: at least minReplicas")
		}
	}
	for _, s := range in.Adjusted.Steps {
		add(s.Stage, s.From, s.To, s.Message)
	}
	return out
}

// winner returns the metric whose proposal won, if any.
func winner(in recordInput) *Metric {
	a := in.Decision.Aggregate
	if a == nil || !a.Usable {
		return nil
	}
	for i := range in.Metrics {
		p := in.Metrics[i].Evaluated.Proposal
		if p.Err == nil && p.Metric == a.Metric && p.Replicas == a.Replicas {
			return &in.Metrics[i]
		}
	}
	return nil
}

// toleranceStep reports a winning proposal held at the current count by the
// tolerance (or by the conservative recomputation for missing pods): from is
// the count the ratio alone would give.
func toleranceStep(w *Metric, current int32, messages bool) (v1alpha1.DecisionStep, bool) {
	res := w.Evaluated.Result
	switch res.Reason {
	case replicas.ReasonWithinTolerance, replicas.ReasonRecomputedWithinTolerance,
		replicas.ReasonRecomputedDirectionFlip, replicas.ReasonRecomputedCountFlip:
	default:
		return v1alpha1.DecisionStep{}, false
	}
	raw := current
	if r := res.UsageRatio * float64(current); r > 0 && r < math.MaxInt32 {
		raw = int32(math.Ceil(r))
	}
	if !messages {
		return v1alpha1.DecisionStep{Stage: StageTolerance, From: raw, To: current}, true
	}
	msg := fmt.Sprintf("usage ratio %.3f within tolerance (down %.2f, up %.2f): %s",
		res.UsageRatio, res.Tolerances.ScaleDown, res.Tolerances.ScaleUp, res.Reason.Describe())
	if res.Reason != replicas.ReasonWithinTolerance {
		msg = fmt.Sprintf("usage ratio %.3f: %s", res.UsageRatio, res.Reason.Describe())
	}
	return v1alpha1.DecisionStep{Stage: StageTolerance, From: raw, To: current, Message: cut(msg)}, true
}

func limitStage(reason string, b *autoscalingv2.HorizontalPodAutoscalerBehavior) string {
	switch reason {
	case behavior.ReasonTooFewReplicas:
		return StageMinReplicas
	case behavior.ReasonTooManyReplicas:
		return StageMaxReplicas
	case behavior.ReasonScaleUpLimit:
		if b == nil {
			return StageScaleUpLimit
		}
		return StageScaleUpPolicy
	case behavior.ReasonScaleDownLimit:
		return StageScaleDownPolicy
	}
	return reason
}

// policies describes the policies of the limiting direction, e.g.
// " (policies: Percent 100 per 15s, Pods 4 per 15s; selectPolicy Max)".
func policies(reason string, b *autoscalingv2.HorizontalPodAutoscalerBehavior) string {
	if reason == behavior.ReasonScaleUpLimit && b == nil {
		return " (without behavior: at most max(2×current, 4))"
	}
	if b == nil {
		return ""
	}
	rules := b.ScaleUp
	if reason == behavior.ReasonScaleDownLimit {
		rules = b.ScaleDown
	} else if reason != behavior.ReasonScaleUpLimit {
		return ""
	}
	if rules == nil || len(rules.Policies) == 0 {
		return " (default policies)"
	}
	parts := make([]string, len(rules.Policies))
	for i, p := range rules.Policies {
		parts[i] = fmt.Sprintf("%s %d per %ds", p.Type, p.Value, p.PeriodSeconds)
	}
	sel := autoscalingv2.MaxChangePolicySelect
	if rules.SelectPolicy != nil {
		sel = *rules.SelectPolicy
	}
	return fmt.Sprintf(" (policies: %s; selectPolicy %s)", strings.Join(parts, ", "), sel)
}

func metricRecord(m Metric) v1alpha1.MetricRecord {
	spec := m.Reading.Spec
	r := v1alpha1.MetricRecord{Type: string(spec.Type), Name: metricName(m)}
	if !m.Reading.Timestamp.IsZero() {
		t := metav1.NewTime(m.Reading.Timestamp)
		r.Timestamp = &t
	}
	if m.Evaluated.Proposal.Err != nil {
		r.Error = cut(m.Evaluated.Proposal.Err.Error())
		return r
	}
	n := m.Evaluated.Proposal.Replicas
	r.Replicas, r.Reason = &n, string(m.Evaluated.Result.Reason)
	if m.Reason != "" {
		r.Reason = cut(m.Reason)
	}
	r.TargetType, r.Target = target(spec)
	r.Value = value(m.Evaluated.Status, r.TargetType)
	return r
}

// metricName names a metric of a record: its own Name, or MetricName.
func metricName(m Metric) string {
	if m.Name != "" {
		return cut(m.Name)
	}
	return cut(MetricName(m.Reading.Spec))
}

// MetricName names a metric in records and messages: the metric's name, or
// the resource (and container) of Resource metrics.
func MetricName(spec autoscalingv2.MetricSpec) string {
	switch {
	case spec.Resource != nil:
		return string(spec.Resource.Name)
	case spec.ContainerResource != nil:
		return string(spec.ContainerResource.Name) + "/" + spec.ContainerResource.Container
	case spec.Pods != nil:
		return spec.Pods.Metric.Name
	case spec.Object != nil:
		return spec.Object.Metric.Name + " on " + spec.Object.DescribedObject.Kind + "/" + spec.Object.DescribedObject.Name
	case spec.External != nil:
		return spec.External.Metric.Name
	}
	return ""
}

func target(spec autoscalingv2.MetricSpec) (string, *resource.Quantity) {
	var t autoscalingv2.MetricTarget
	switch {
	case spec.Resource != nil:
		t = spec.Resource.Target
	case spec.ContainerResource != nil:
		t = spec.ContainerResource.Target
	case spec.Pods != nil:
		t = spec.Pods.Target
	case spec.Object != nil:
		t = spec.Object.Target
	case spec.External != nil:
		t = spec.External.Target
	}
	switch {
	case t.AverageValue != nil:
		return string(autoscalingv2.AverageValueMetricType), copyQ(t.AverageValue)
	case t.Value != nil:
		return string(autoscalingv2.ValueMetricType), copyQ(t.Value)
	case t.AverageUtilization != nil:
		return string(autoscalingv2.UtilizationMetricType), resource.NewQuantity(int64(*t.AverageUtilization), resource.DecimalSI)
	}
	return string(t.Type), nil
}

func value(s autoscalingv2.MetricStatus, targetType string) *resource.Quantity {
	var v autoscalingv2.MetricValueStatus
	switch {
	case s.Resource != nil:
		v = s.Resource.Current
	case s.ContainerResource != nil:
		v = s.ContainerResource.Current
	case s.Pods != nil:
		v = s.Pods.Current
	case s.Object != nil:
		v = s.Object.Current
	case s.External != nil:
		v = s.External.Current
	}
	switch {
	case targetType == string(autoscalingv2.UtilizationMetricType) && v.AverageUtilization != nil:
		return resource.NewQuantity(int64(*v.AverageUtilization), resource.DecimalSI)
	case v.AverageValue != nil:
		return copyQ(v.AverageValue)
	case v.Value != nil:
		return copyQ(v.Value)
	}
	return nil
}

func copyQ(q *resource.Quantity) *resource.Quantity {
	c := q.DeepCopy()
	return &c
}
