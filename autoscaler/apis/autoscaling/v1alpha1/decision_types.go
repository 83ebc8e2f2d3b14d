package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of a DecisionRecord, so that it stays small enough to ride along
// with every status write and to fit an annotation.
const (
	// MaxRecordedMetrics is the most metrics a record lists (in spec order).
	MaxRecordedMetrics = 20
	// MaxRecordedSteps is the most steps a record lists.
	MaxRecordedSteps = 20
	// MaxRecordedMessage is the longest message or error text a record keeps,
	// in bytes; longer texts are cut and end with "...".
	MaxRecordedMessage = 256
	// MaxEvaluatedBy is the longest DecisionRecord.EvaluatedBy, in bytes:
	// the longest --leader-elect-identity ebbflow-autoscaler accepts.
	MaxEvaluatedBy = 128
)

// LastDecisionAnnotation holds the DecisionRecord of a HorizontalPodAutoscaler
// evaluated by ebbflow-autoscaler in drop-in mode, as compact JSON. It is
// rewritten only when the outcome of an evaluation changes.
const LastDecisionAnnotation = "autoscaling.ebbflow.dev/last-decision"

// ScaleEventsAnnotation holds the rescales the behavior's rate policies still
// count (per direction, [change, unix milliseconds] pairs), written by
// ebbflow-autoscaler after each rescale of a drop-in HPA with a behavior
// (Autoscalers keep them in status.scaleEvents). A replica that takes over the leader election reads it, so a
// failover does not forget a recent rescale and let the policies allow a
// second step within their period. It is bounded (32 events per direction,
// 4 KiB); an invalid value is reported with a Warning event and ignored.
const ScaleEventsAnnotation = "autoscaling.ebbflow.dev/scale-events"

// PausedAnnotation and DryRunAnnotation switch pause and dry-run on for a
// HorizontalPodAutoscaler in drop-in mode ("true" or "false"; any other
// value is reported with a Warning event and read as "false").
const (
	PausedAnnotation = "autoscaling.ebbflow.dev/paused"
	DryRunAnnotation = "autoscaling.ebbflow.dev/dry-run"
)

// SyncPeriodAnnotation is spec.syncPeriodSeconds for a HorizontalPodAutoscaler
// in drop-in mode: whole seconds, MinSyncPeriodSeconds to
// MaxSyncPeriodSeconds; any other value is reported with a Warning event and
// the controller's sync period applies.
const SyncPeriodAnnotation = "autoscaling.ebbflow.dev/sync-period-seconds"

// Outcome of an evaluation, as a DecisionRecord reports it.
type Outcome string

// Outcomes.
const (
	// OutcomeScaledUp and OutcomeScaledDown: the scale was written.
	OutcomeScaledUp   Outcome = "ScaledUp"
	OutcomeScaledDown Outcome = "ScaledDown"
	// OutcomeUnchanged: the decision was to keep the current replicas.
	OutcomeUnchanged Outcome = "Unchanged"
	// OutcomeWouldScale: a change was decided but not written (paused or dry-run).
	OutcomeWouldScale Outcome = "WouldScale"
	// OutcomeFailed: no decision was possible (scale unreadable, metrics
	// failed) or the scale write failed.
	OutcomeFailed Outcome = "Failed"
)

// DecisionRecord explains one evaluation of an autoscaler: what it read,
// what each metric proposed, which proposal won, what changed it on the way to
// the final replica count, and whether the scale was written.
type DecisionRecord struct {
	// time is when the evaluation ran.
	Time metav1.Time `json:"time"`

	// outcome summarizes the evaluation.
	Outcome Outcome `json:"outcome"`

	// currentReplicas is the target's spec.replicas when the evaluation began.
	CurrentReplicas int32 `json:"currentReplicas"`

	// metrics are the metrics read, in spec order (at most 20).
	// +listType=atomic
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Metrics []MetricRecord `json:"metrics,omitempty"`

	// proposal is the replica count the winning metric proposed (the maximum
	// over the metrics), before any step below changed it.
	// +optional
	Proposal *int32 `json:"proposal,omitempty"`

	// winningMetric names the metric whose proposal won.
	// +optional
	WinningMetric string `json:"winningMetric,omitempty"`

	// steps are what changed the proposal, in order (at most 20).
	// +listType=atomic
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Steps []DecisionStep `json:"steps,omitempty"`

	// desiredReplicas is the final replica count.
	DesiredReplicas int32 `json:"desiredReplicas"`

	// scaled is true when the scale subresource was written.
	Scaled bool `json:"scaled"`

	// notScaledReason says why the scale was not written, when it was not
	// (unchanged, paused, dry-run, failure).
	// +optional
	NotScaledReason string `json:"notScaledReason,omitempty"`

	// error is the failure that stopped or limited the evaluation, if any.
	// +optional
	Error string `json:"error,omitempty"`

	// evaluatedBy is the leader-election identity (the Lease's
	// holderIdentity: by default the host name, in a pod the pod name, then
	// "_" and a unique suffix) of the ebbflow-autoscaler replica that ran the
	// evaluation and stored this record. A replica that finds a record by
	// another identity rewrites it at its first evaluation. Empty when the
	// replica has no identity (an evaluation outside ebbflow-autoscaler).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	EvaluatedBy string `json:"evaluatedBy,omitempty"`
}

// MetricRecord is one metric of a DecisionRecord.
type MetricRecord struct {
	// type is the metric source type (Resource, ContainerResource, Pods,
	// Object, External).
	Type string `json:"type"`

	// name is the metric's name (the resource name for Resource metrics).
	Name string `json:"name"`

	// value is the current value as the metrics API returned it (for
	// Utilization targets, the utilization in percent).
	// +optional
	Value *resource.Quantity `json:"value,omitempty"`

	// target is the spec's target in the same unit as value.
	// +optional
	Target *resource.Quantity `json:"target,omitempty"`

	// targetType is the target's type (Utilization, Value, AverageValue).
	// +optional
	TargetType string `json:"targetType,omitempty"`

	// timestamp is the sample's own timestamp as the metrics API returned it.
	// +optional
	Timestamp *metav1.Time `json:"timestamp,omitempty"`

	// replicas is the count this metric proposed.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// reason is the rule that produced replicas (for example
	// WithinTolerance, Proportional).
	// +optional
	Reason string `json:"reason,omitempty"`

	// error is why the metric gave no proposal.
	// +optional
	Error string `json:"error,omitempty"`
}

// DecisionStep is one change of the replica count between the winning
// proposal and the final count.
type DecisionStep struct {
	// stage names the rule: Bounds, Tolerance, ScaleUpStabilization,
	// ScaleDownStabilization, ScaleUpLimit, ScaleDownLimit, ScaleUpPolicy,
	// ScaleDownPolicy, MinReplicas, MaxReplicas, ScaleFromZero, or an
	// extension (Fallback, Activation, Forecast, Schedule, Paused, DryRun).
	Stage string `json:"stage"`

	// from and to are the replica counts before and after the step.
	From int32 `json:"from"`
	To   int32 `json:"to"`

	// message explains the step.
	// +optional
	Message string `json:"message,omitempty"`
}
