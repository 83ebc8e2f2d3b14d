package evaluation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
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

// Record returns the whole decision record: its outline with the metrics
// and the messages of the steps. It is pure and bounded: at most
// v1alpha1.MaxRecordedMetrics metrics and MaxRecordedSteps steps, messages
// cut to MaxRecordedMessage bytes.
func (r *Result) Record() v1alpha1.DecisionRecord { return r.build(true) }

// outline returns the record without its metrics: what Signature reads, at
// a fraction of Record's cost (the controller builds the whole record only
// when it is to be written). Its steps are the result's own.
func (r *Result) outline() v1alpha1.DecisionRecord { return r.build(false) }

// build returns the record of the evaluation; its steps are those the
// stages added, in their order (stages.go).
func (r *Result) build(whole bool) v1alpha1.DecisionRecord {
	d := r.Decision
	current := r.in.Scale.SpecReplicas
	if r.in.ScaleErr != nil {
		current = 0
	}
	rec := v1alpha1.DecisionRecord{
		Time:            metav1.NewTime(r.in.ReadAt),
		CurrentReplicas: current,
		DesiredReplicas: d.Desired,
		Scaled:          r.Scaled,
	}
	for i, m := range r.Metrics {
		if i == v1alpha1.MaxRecordedMetrics || !whole {
			break
		}
		rec.Metrics = append(rec.Metrics, metricRecord(m))
	}
	if d.Aggregate != nil && d.Aggregate.Usable {
		p := d.Aggregate.Replicas
		rec.Proposal, rec.WinningMetric = &p, cut(d.Aggregate.Metric)
		if w := r.winner(); w != nil {
			rec.WinningMetric = metricName(*w)
		}
	}
	if steps := r.steps[:min(len(r.steps), v1alpha1.MaxRecordedSteps)]; whole && len(steps) > 0 {
		rec.Steps = slices.Clone(steps)
	} else if len(steps) > 0 {
		rec.Steps = steps
	}
	err := r.Err
	if err == nil {
		err = d.Err
	}
	if err != nil {
		rec.Error = cut(err.Error())
	}
	rec.Outcome, rec.NotScaledReason = r.outcome(err)
	if rec.Outcome == v1alpha1.OutcomeFailed && !r.Scaled {
		rec.DesiredReplicas = current
	}
	return rec
}

func (r *Result) outcome(err error) (v1alpha1.Outcome, string) {
	switch {
	case r.Scaled && r.Decision.Desired > r.in.Scale.SpecReplicas:
		return v1alpha1.OutcomeScaledUp, ""
	case r.Scaled:
		return v1alpha1.OutcomeScaledDown, ""
	case err != nil && (r.Decision.Failed || r.Write || r.Decision.Gate.Action == ""):
		return v1alpha1.OutcomeFailed, "the evaluation failed"
	case r.held == HoldPaused:
		return v1alpha1.OutcomeWouldScale, "paused"
	case r.held == HoldDryRun:
		return v1alpha1.OutcomeWouldScale, "dry run"
	case r.Decision.Gate.Action == ScalingDisabled:
		return v1alpha1.OutcomeUnchanged, "scaling is disabled since the replica count of the target is zero"
	}
	return v1alpha1.OutcomeUnchanged, "the desired replicas equal the current replicas"
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

// Winner returns the record of the metric whose proposal won (its value as
// read, the replicas it proposed, its reason), or nil when none won: what a
// log line of the evaluation needs to explain the proposal without the whole
// record.
func (r *Result) Winner() *v1alpha1.MetricRecord {
	w := r.winner()
	if w == nil {
		return nil
	}
	rec := metricRecord(*w)
	return &rec
}

// winner returns the metric whose proposal won, if any.
func (r *Result) winner() *Metric {
	a := r.Decision.Aggregate
	if a == nil || !a.Usable {
		return nil
	}
	for i := range r.Metrics {
		p := r.Metrics[i].Evaluated.Proposal
		if p.Err == nil && p.Metric == a.Metric && p.Replicas == a.Replicas {
			return &r.Metrics[i]
		}
	}
	return nil
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
