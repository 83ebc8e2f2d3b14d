package evaluation

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Stage names of the steps the upstream-equal decision contributes.
const (
	StageBounds                 = "Bounds"
	StageScalingDisabled        = "ScalingDisabled"
	StageTolerance              = "Tolerance"
	StageScaleUpStabilization   = "ScaleUpStabilization"
	StageScaleDownStabilization = "ScaleDownStabilization"
	StageScaleUpLimit           = "ScaleUpLimit"
	StageScaleUpPolicy          = "ScaleUpPolicy"
	StageScaleDownPolicy        = "ScaleDownPolicy"
	StageMinReplicas            = "MinReplicas"
	StageMaxReplicas            = "MaxReplicas"
	StageScaleFromZero          = "ScaleFromZero"
)

// recordInput is everything a record is built from.
type recordInput struct {
	Now             time.Time
	CurrentReplicas int32
	// Behavior is the spec's behavior (nil: the fixed rules).
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
	// Metrics are the evaluated metrics with their readings, in spec order;
	// empty when no metric was read.
	Metrics []Metric
	// Decision and Adjusted are the results of the decide and adjust stages.
	Decision Decision
	Adjusted held
	// Scaled is true when the scale was written.
	Scaled bool
	// Err is the failure of the evaluation, if any (scale read, metrics,
	// scale write).
	Err error
}

// buildRecord returns the record of one evaluation. It is pure and bounded: at most
// v1alpha1.MaxRecordedMetrics metrics and MaxRecordedSteps steps, messages cut
// to MaxRecordedMessage bytes.
func buildRecord(in recordInput) v1alpha1.DecisionRecord {
	return build(in, true)
}

// outlineRecord returns the record without its metrics and step messages: what
// Signature reads, at a fraction of Build's cost (the
// controller builds the whole record only when it is to be written).
func outlineRecord(in recordInput) v1alpha1.DecisionRecord {
	return build(in, false)
}

func build(in recordInput, whole bool) v1alpha1.DecisionRecord {
	d := in.Decision
	rec := v1alpha1.DecisionRecord{
		Time:            metav1.NewTime(in.Now),
		CurrentReplicas: in.CurrentReplicas,
		DesiredReplicas: in.Adjusted.Desired,
		Scaled:          in.Scaled,
	}
	for i, m := range in.Metrics {
		if i == v1alpha1.MaxRecordedMetrics || !whole {
			break
		}
		rec.Metrics = append(rec.Metrics, metricRecord(m))
	}
	if d.Aggregate != nil && d.Aggregate.Usable {
		p := d.Aggregate.Replicas
		rec.Proposal, rec.WinningMetric = &p, cut(d.Aggregate.Metric)
		if w := winner(in); w != nil {
			rec.WinningMetric = metricName(*w)
		}
	}
	rec.Steps = steps(in, whole)
	if len(rec.Steps) > v1alpha1.MaxRecordedSteps {
		rec.Steps = rec.Steps[:v1alpha1.MaxRecordedSteps]
	}
	if in.Err != nil {
		rec.Error = cut(in.Err.Error())
	}
	rec.Outcome, rec.NotScaledReason = outcome(in)
	if rec.Outcome == v1alpha1.OutcomeFailed && !in.Scaled {
		rec.DesiredReplicas = in.CurrentReplicas
	}
	return rec
}

func outcome(in recordInput) (v1alpha1.Outcome, string) {
	switch {
	case in.Scaled && in.Adjusted.Desired > in.CurrentReplicas:
		return v1alpha1.OutcomeScaledUp, ""
	case in.Scaled:
		return v1alpha1.OutcomeScaledDown, ""
	case in.Err != nil && (in.Decision.Failed || in.Adjusted.Write || in.Decision.Gate.Action == ""):
		return v1alpha1.OutcomeFailed, "the evaluation failed"
	case in.Adjusted.Hold == HoldPaused:
		return v1alpha1.OutcomeWouldScale, "paused"
	case in.Adjusted.Hold == HoldDryRun:
		return v1alpha1.OutcomeWouldScale, "dry run"
	case in.Decision.Gate.Action == ScalingDisabled:
		return v1alpha1.OutcomeUnchanged, "scaling is disabled since the replica count of the target is zero"
	}
	return v1alpha1.OutcomeUnchanged, "the desired replicas equal the current replicas"
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

// cut bounds a message to v1alpha1.MaxRecordedMessage bytes, on a rune
// boundary.
func cut(s string) string {
	const suffix = "..."
	if len(s) <= v1alpha1.MaxRecordedMessage {
		return s
	}
	n := v1alpha1.MaxRecordedMessage - len(suffix)
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + suffix
}

// Signature is a compact key of a record's outcome: two records have the same
// signature exactly when they describe the same outcome: the same replicas
// before and after, the same winning metric, the same steps (by stage),
// whether the scale was written and why not, and the same error (time,
// metric values and messages may differ). "" for a nil record.
func Signature(r *v1alpha1.DecisionRecord) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	b.Grow(64 + len(r.WinningMetric) + len(r.Error) + len(r.NotScaledReason) + 16*len(r.Steps))
	fmt.Fprintf(&b, "%s|%d|%d|%t|", r.Outcome, r.CurrentReplicas, r.DesiredReplicas, r.Scaled)
	for _, s := range []string{r.WinningMetric, r.NotScaledReason, r.Error} {
		b.WriteString(strconv.Quote(s))
		b.WriteByte('|')
	}
	for _, s := range r.Steps {
		b.WriteString(s.Stage)
		b.WriteByte(',')
	}
	return b.String()
}

// StageNames lists the stages of a record's steps, in order.
func StageNames(r *v1alpha1.DecisionRecord) []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.Stage
	}
	return out
}

// EncodeRecord returns the record as compact JSON, the value of
// v1alpha1.LastDecisionAnnotation.
func EncodeRecord(r *v1alpha1.DecisionRecord) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode decision record: %w", err)
	}
	return string(b), nil
}

// DecodeRecord parses the value of v1alpha1.LastDecisionAnnotation.
func DecodeRecord(s string) (*v1alpha1.DecisionRecord, error) {
	var r v1alpha1.DecisionRecord
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("decode decision record: %w", err)
	}
	return &r, nil
}
