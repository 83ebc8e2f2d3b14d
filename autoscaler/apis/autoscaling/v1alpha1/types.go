package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Autoscaler scales the workload named by spec.scaleTargetRef through its
// /scale subresource, from metrics read through the standard metrics APIs
// (metrics.k8s.io, custom.metrics.k8s.io, external.metrics.k8s.io). Its spec
// and status are field for field those of an autoscaling/v2
// HorizontalPodAutoscaler, and its decisions are those kube-controller-manager
// would make for the same HPA.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=eas,categories={all,ebbflow,autoscaling}
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.scaleTargetRef.kind`,description="Kind of the scale target"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.scaleTargetRef.name`,description="Name of the scale target"
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.spec.minReplicas`,description="Lower replica limit"
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.spec.maxReplicas`,description="Upper replica limit"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.currentReplicas`,description="Replicas the target had at the last evaluation"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`,description="Replicas last decided"
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`,description="Scale writes are paused"
// +kubebuilder:printcolumn:name="DryRun",type=boolean,JSONPath=`.spec.dryRun`,description="Decisions are recorded, never applied"
// +kubebuilder:printcolumn:name="Metric",type=string,JSONPath=`.spec.metrics[0].type`,description="Type of the first metric (a column cannot list them all; see status.currentMetrics)",priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Autoscaler struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired behaviour of the autoscaler: an autoscaling/v2
	// HorizontalPodAutoscaler spec.
	// +required
	Spec AutoscalerSpec `json:"spec"`

	// status is the state last observed by the autoscaler: an autoscaling/v2
	// HorizontalPodAutoscaler status. Written only through the status
	// subresource.
	// +optional
	Status AutoscalerStatus `json:"status,omitempty"`
}

// AutoscalerSpec has every field of autoscaling/v2 HorizontalPodAutoscalerSpec
// (same names, types, JSON and defaults), so that an HPA spec can be pasted
// unchanged, and the extensions after them. ToHPASpec converts the HPA fields
// without loss (tests convert back with v1alpha1test.FromHPASpec).
//
// +kubebuilder:validation:XValidation:rule="!(has(self.paused) && self.paused && has(self.dryRun) && self.dryRun)",message="paused and dryRun are exclusive: a paused autoscaler decides nothing to rehearse; set one of them",fieldPath=".dryRun",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="must be greater than or equal to `minReplicas`",fieldPath=".maxReplicas",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.schedules) || self.schedules.all(s, s.minReplicas <= self.maxReplicas)",message="a schedule's minReplicas must be less than or equal to maxReplicas",fieldPath=".schedules",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas != 0 || (has(self.metrics) && self.metrics.exists(m, m.type == 'Object' || m.type == 'External'))",message="must specify at least one Object or External metric to support scaling to zero replicas",fieldPath=".metrics",reason=FieldValueForbidden
type AutoscalerSpec struct {
	// scaleTargetRef points to the target resource to scale (any resource
	// with a /scale subresource), whose pods are the ones metrics are
	// collected for and whose replica count is changed.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.apiVersion) && self.apiVersion != ''",message="apiVersion must specify API group",fieldPath=".apiVersion",reason=FieldValueRequired
	// +kubebuilder:validation:XValidation:rule="!(self.kind in ['.', '..']) && !self.kind.contains('/') && !self.kind.contains('%') && !(self.name in ['.', '..']) && !self.name.contains('/') && !self.name.contains('%')",message="kind and name may not be '.' or '..' and may not contain '/' or '%'"
	ScaleTargetRef autoscalingv2.CrossVersionObjectReference `json:"scaleTargetRef"`

	// minReplicas is the lower limit for the number of replicas to which the
	// autoscaler can scale down. It defaults to 1 pod (the API server sets
	// it, as for an HPA). It may be 0 when at least one Object or External
	// metric is configured; scaling is then active as long as at least one
	// metric value is available.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the upper limit for the number of replicas to which the
	// autoscaler can scale up. It cannot be less than minReplicas.
	// +required
	// +kubebuilder:validation:Minimum=1
	MaxReplicas int32 `json:"maxReplicas"`

	// metrics are the metrics the desired replica count is computed from
	// (the largest count over all metrics wins): the HPA's metric sources,
	// and ClusterProportional. If not set, the API server
	// sets the default, 80% average CPU utilization, as for an HPA. At most
	// 100 (an HPA has no limit): the bound lets the API server afford the
	// per-metric CEL rules.
	// +listType=atomic
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:default={{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}}
	// +kubebuilder:validation:items:XValidation:rule="(self.type == 'Resource') == has(self.resource) && (self.type == 'ContainerResource') == has(self.containerResource) && (self.type == 'Pods') == has(self.pods) && (self.type == 'Object') == has(self.object) && (self.type == 'External') == has(self.external) && (self.type == 'ClusterProportional') == has(self.clusterProportional)",message="must populate the given metric source only (the field named by type: resource, containerResource, pods, object, external or clusterProportional)"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.activation) && !has(self.treatMissingAs) || self.type == 'Object' || self.type == 'External'",message="activation and treatMissingAs apply to Object and External metrics only",reason=FieldValueForbidden
	// +kubebuilder:validation:items:XValidation:rule="!has(self.forecast) || self.type == 'Pods' || self.type == 'Object' || self.type == 'External'",message="forecast applies to Pods, Object and External metrics only",fieldPath=".forecast",reason=FieldValueForbidden
	// +kubebuilder:validation:items:XValidation:rule="!has(self.resource) || has(self.resource.target.averageUtilization) != has(self.resource.target.averageValue)",message="must set either a target raw value or a target utilization, not both",fieldPath=".resource.target"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.containerResource) || has(self.containerResource.target.averageUtilization) != has(self.containerResource.target.averageValue)",message="must set either a target raw value or a target utilization, not both",fieldPath=".containerResource.target"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.pods) || has(self.pods.target.averageValue)",message="must specify a positive target averageValue",fieldPath=".pods.target.averageValue",reason=FieldValueRequired
	// +kubebuilder:validation:items:XValidation:rule="!has(self.object) || has(self.object.target.value) || has(self.object.target.averageValue)",message="must set either a target value or averageValue",fieldPath=".object.target",reason=FieldValueRequired
	// +kubebuilder:validation:items:XValidation:rule="!has(self.external) || has(self.external.target.value) != has(self.external.target.averageValue)",message="must set either a target value for metric or a per-pod target, not both",fieldPath=".external.target"
	Metrics []MetricSpec `json:"metrics,omitempty"`

	// behavior configures the scaling behavior of the target in both the up
	// and the down direction (scaleUp and scaleDown). If not set, the
	// default HPAScalingRules for scale up and scale down are used.
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`

	// paused stops all writes to the target's scale. Metrics are still read
	// and status, conditions and status.lastDecision still say what the
	// autoscaler would do; on unpause it goes on from the target's current
	// replicas through the normal behaviors.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// scaleToZero lets metrics with an activation threshold take the target
	// to zero replicas and back (minReplicas 0 and at least one Object or
	// External metric required).
	// +optional
	ScaleToZero *ScaleToZeroSpec `json:"scaleToZero,omitempty"`

	// fallback says what to do when metrics are failed or stale.
	// +optional
	Fallback *FallbackSpec `json:"fallback,omitempty"`

	// dryRun computes and records every decision (status, conditions,
	// status.lastDecision, DryRunRescale events) but never writes the
	// target's scale. Exclusive with paused.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`

	// schedules are floors for known events (cron, time zone, duration,
	// minReplicas, ramp): the largest active floor raises the metrics'
	// proposal before the behaviors. At most 20.
	// +listType=atomic
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Schedules []ScheduleSpec `json:"schedules,omitempty"`

	// syncPeriodSeconds is how often this autoscaler is evaluated, in
	// seconds (1 to 3600), overriding ebbflow-autoscaler's
	// --horizontal-pod-autoscaler-sync-period (default 15 s), as upstream's
	// KEP-6003 proposes for HPAs. `ebbflow simulate` evaluates it at this
	// period too.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	SyncPeriodSeconds *int32 `json:"syncPeriodSeconds,omitempty"`
}

// AutoscalerStatus has every field of autoscaling/v2
// HorizontalPodAutoscalerStatus, and the decision record. FromHPAStatus and
// ToHPAStatus convert the HPA fields without loss.
type AutoscalerStatus struct {
	// observedGeneration is the most recent generation observed by this
	// autoscaler.
	// +optional
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`

	// lastScaleTime is the last time the autoscaler changed the number of
	// replicas of the target.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`

	// currentReplicas is the number of replicas of the target as last seen
	// by the autoscaler.
	// +optional
	CurrentReplicas int32 `json:"currentReplicas,omitempty"`

	// desiredReplicas is the number of replicas of the target as last
	// calculated by the autoscaler.
	// +required
	DesiredReplicas int32 `json:"desiredReplicas"`

	// currentMetrics is the last read state of the metrics used by this
	// autoscaler, in the order of spec.metrics.
	// +listType=atomic
	// +optional
	CurrentMetrics []MetricStatus `json:"currentMetrics,omitempty"`

	// conditions is the set of conditions required for this autoscaler to
	// scale its target, and whether those conditions are met (AbleToScale,
	// ScalingActive, ScalingLimited).
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	Conditions []autoscalingv2.HorizontalPodAutoscalerCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// lastDecision explains the last evaluation whose outcome differed from
	// the one before, or the last one written with the status. Read it with
	// `ebbflow explain`.
	// +optional
	LastDecision *DecisionRecord `json:"lastDecision,omitempty"`

	// scaleEvents are the rescales the behavior's rate policies still count,
	// as compact JSON (per direction, [change, unix milliseconds] pairs; at
	// most 32 each). A replica that takes over the leader election reads
	// them, so a failover does not let the policies allow a second step
	// within their period.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	ScaleEvents string `json:"scaleEvents,omitempty"`
}

// AutoscalerList is a list of Autoscalers.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type AutoscalerList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items is the list of Autoscalers.
	Items []Autoscaler `json:"items"`
}
