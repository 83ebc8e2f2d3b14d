package controller

import (
	"context"
	"fmt"
	"maps"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/autoscaler/adjust"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/record"
)

// outcome is everything the record stage writes about.
type outcome struct {
	obs observation
	dec decided
	adj adjust.Result
	// scaled is true when act wrote the scale.
	scaled bool
	// err is the failure to read (observe) or write (act) the scale.
	err error
}

// record is the last stage and the only one that writes the autoscaler: it
// sets the extensions' conditions, rebuilds the status, builds the decision
// record, records the queued events, writes status (and record) once if they
// changed, and counts the outcome.
func (ev *evaluation) record(ctx context.Context, out outcome) error {
	d, obs := out.dec.D, out.obs
	ext := out.dec.Ext
	for _, c := range append(ext.Conditions, out.adj.Conditions...) {
		if c.Status == corev1.ConditionTrue || hasCondition(ev.obj.Status, c.Type) {
			ev.set(c)
		}
	}
	ev.c.deps.SelfMetrics.fallback(ev.key, ext.FallbackActive)
	for _, e := range append(ext.Events, out.adj.Events...) {
		ev.events = append(ev.events, event{e.Type, e.Reason, e.Message})
	}
	var result error
	switch {
	case obs.scaleErr != nil:
		ev.warn("FailedGetScale", obs.scaleErr.cause.Error())
		ev.set(condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale",
			fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", obs.scaleErr.cause)))
		result = obs.scaleErr
	case d.Failed:
		ev.setStatus(obs.current, ev.obj.Status.DesiredReplicas, out.dec.Statuses, false)
		ev.warn("FailedComputeMetricsReplicas", d.Err.Error())
		result = fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", ev.target, d.Err)
	case out.err != nil:
		ev.setStatus(obs.current, ev.obj.Status.DesiredReplicas, out.dec.Statuses, false)
		result = out.err
	default:
		ev.setStatus(obs.current, out.adj.Desired, out.dec.Statuses, out.scaled)
	}
	if len(ev.obj.Proportional) > 0 && out.obs.scaleErr == nil && !maps.Equal(ev.obj.ProportionalStatus, out.dec.proportionalStatus) {
		ev.obj.ProportionalStatus, ev.proportionalChanged = out.dec.proportionalStatus, true
	}
	in := ev.recordInput(out, result)
	outline := record.Outline(in)
	for _, e := range ev.events {
		ev.c.deps.Recorder.Event(ev.obj.Source, e.eventType, e.reason, e.message)
	}
	eventsChanged := ev.stageScaleEvents(out.scaled)
	err := ev.write(ctx, in, &outline, eventsChanged)
	ev.count(out, &outline)
	klog.FromContext(ctx).V(2).Info("Evaluated", "outcome", outline.Outcome, "currentReplicas", outline.CurrentReplicas,
		"desiredReplicas", outline.DesiredReplicas, "winningMetric", outline.WinningMetric, "steps", stageNames(&outline),
		"scaled", outline.Scaled, "notScaledReason", outline.NotScaledReason, "scaleTarget", ev.target)
	if result != nil {
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Status update failed")
		}
		return result
	}
	if err != nil {
		return err
	}
	// Some metrics may have failed without stopping the decision; upstream
	// reports that after acting.
	return d.Err
}

// recordInput is what the decision record of this evaluation is built from.
func (ev *evaluation) recordInput(out outcome, result error) record.Input {
	in := record.Input{
		Now:             ev.now,
		CurrentReplicas: out.obs.current,
		Behavior:        ev.obj.Spec.Behavior,
		Decision:        out.dec.D,
		Adjusted:        out.adj,
		Scaled:          out.scaled,
		Err:             result,
	}
	if result == nil {
		in.Err = out.dec.D.Err
	}
	for i, e := range out.dec.Evaluated {
		in.Metrics = append(in.Metrics, record.Metric{Reading: out.obs.readings[i], Evaluated: e})
	}
	in.Metrics = append(in.Metrics, out.dec.proportional...)
	return in
}

// setStatus rebuilds the status as upstream's setStatus: replica counts,
// metric statuses and observed generation replaced, conditions kept, last
// scale time moved on a rescale.
func (ev *evaluation) setStatus(current, desired int32, statuses []autoscalingv2.MetricStatus, rescaled bool) {
	generation := ev.obj.Generation
	st := autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: &generation,
		LastScaleTime:      ev.obj.Status.LastScaleTime,
		CurrentReplicas:    current,
		DesiredReplicas:    desired,
		CurrentMetrics:     statuses,
		Conditions:         ev.obj.Status.Conditions,
	}
	if rescaled {
		now := metav1.NewTime(ev.c.deps.Clock.Now())
		st.LastScaleTime = &now
	}
	ev.obj.Status = st
}

// write writes the status if it differs from the one read, and the decision
// record if its outcome differs from the stored one. Where the record lives
// in the status (Autoscalers) it never causes a write of its own: a changed
// outcome or status writes both; otherwise nothing is written. Elsewhere
// (HPAs: an annotation) it is written only when the outcome changed.
//
// The whole record is built only when it is written; the comparison reads
// its outline.
func (ev *evaluation) write(ctx context.Context, in record.Input, outline *v1alpha1.DecisionRecord, eventsChanged bool) error {
	statusChanged := !apiequality.Semantic.DeepEqual(ev.original, &ev.obj.Status) || ev.proportionalChanged
	recordChanged := record.Signature(outline) != ev.obj.LastDecisionSignature
	if ev.b.DecisionInStatus() {
		if !statusChanged && !recordChanged && !eventsChanged {
			return nil
		}
		rec := record.Build(in)
		ev.obj.LastDecision = &rec
		return ev.updateStatus(ctx)
	}
	var err error
	if statusChanged {
		err = ev.updateStatus(ctx)
	}
	if err != nil || (!recordChanged && !eventsChanged) {
		return err
	}
	var rec *v1alpha1.DecisionRecord
	if recordChanged {
		built := record.Build(in)
		rec = &built
	}
	rv, err := ev.b.WriteAnnotations(ctx, ev.obj, rec, eventsChanged)
	if err != nil {
		return fmt.Errorf("failed to store the decision record and scale events of %s: %w", ev.obj.Name, err)
	}
	ev.c.writes.wrote(ev.key, rv)
	ev.c.deps.SelfMetrics.apiWrite("annotations")
	return nil
}

func (ev *evaluation) updateStatus(ctx context.Context) error {
	rv, err := ev.b.UpdateStatus(ctx, ev.obj)
	if err != nil {
		ev.c.deps.Recorder.Event(ev.obj.Source, corev1.EventTypeWarning, "FailedUpdateStatus", err.Error())
		return fmt.Errorf("failed to update status for %s: %w", ev.obj.Name, err)
	}
	ev.c.writes.wrote(ev.key, rv)
	ev.c.deps.SelfMetrics.apiWrite("status")
	klog.FromContext(ctx).V(2).Info("Successfully updated status")
	return nil
}

// count records the outcome in the self-metrics.
func (ev *evaluation) count(out outcome, rec *v1alpha1.DecisionRecord) {
	m := ev.c.deps.SelfMetrics
	m.outcome(string(rec.Outcome))
	switch {
	case out.obs.scaleErr != nil:
	case out.dec.D.Failed || out.err != nil:
		m.decision("failed")
	case out.scaled && out.adj.Desired > out.obs.current:
		m.decision("up")
	case out.scaled:
		m.decision("down")
	default:
		m.decision("none")
	}
}

func stageNames(rec *v1alpha1.DecisionRecord) []string {
	out := make([]string, len(rec.Steps))
	for i, s := range rec.Steps {
		out[i] = s.Stage
	}
	return out
}

// hasCondition reports whether status holds a condition of type t.
func hasCondition(status autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) bool {
	for _, c := range status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
