package evaluation

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
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
	// Forecasts are the metrics' forecasts.
	Forecasts []forecastOutcome
	// Scaled is true when the scale was written.
	Scaled bool
	// Floor is the schedules' floor.
	Floor *Floor
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
// Signature reads, at a fraction of buildRecord's cost (the
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

// Record returns the whole decision record (the outline with the metrics
// and the messages of the steps).
func (r *Result) Record() v1alpha1.DecisionRecord { return buildRecord(r.recordInput()) }

func (r *Result) recordInput() recordInput {
	in := &r.in
	ri := recordInput{
		Now:             in.ReadAt,
		CurrentReplicas: in.Scale.SpecReplicas,
		Behavior:        in.Spec.HPA.Behavior,
		Metrics:         r.Metrics,
		Decision:        r.Decision,
		Adjusted:        r.holds,
		Forecasts:       r.forecastOutcomes,
		Scaled:          r.Scaled,
		Floor:           &r.Floor,
		Err:             r.Err,
	}
	if in.ScaleErr != nil {
		ri.CurrentReplicas = 0
	}
	if r.Err == nil {
		ri.Err = r.Decision.Err
	}
	return ri
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
