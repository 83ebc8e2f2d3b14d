package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterProportionalMetricSourceType is the metric type of a
// cluster-proportional source: replicas from the size of the cluster, as
// cluster-proportional-autoscaler computes them.
const ClusterProportionalMetricSourceType autoscalingv2.MetricSourceType = "ClusterProportional"

// MetricSpec is an autoscaling/v2 MetricSpec (its fields inline, so an HPA's
// metrics paste unchanged) with ebbflow's options and its own source type.
type MetricSpec struct {
	autoscalingv2.MetricSpec `json:",inline"`

	// clusterProportional sizes the workload by the size of the cluster
	// (type ClusterProportional), with cluster-proportional-autoscaler's
	// linear or ladder parameters. Its proposal combines with the other
	// metrics by maximum and goes through the behaviors and bounds.
	// +optional
	ClusterProportional *ClusterProportionalSource `json:"clusterProportional,omitempty"`

	// activation is the value, in the unit of the metric's target, above
	// which the metric wakes a workload at zero replicas; at or below it the
	// metric counts as idle for spec.scaleToZero. Object and External
	// metrics only.
	// +optional
	Activation *resource.Quantity `json:"activation,omitempty"`

	// treatMissingAs Zero reads an empty answer, or NaN, as the value 0 (a
	// queue that reports nothing when it is empty). Unset, such a metric is
	// failed: it never causes a scale-down and, after spec.fallback.after,
	// triggers the fallback. Object and External metrics only.
	// +optional
	// +kubebuilder:validation:Enum=Zero
	TreatMissingAs MissingPolicy `json:"treatMissingAs,omitempty"`

	// forecast adds a floor from a forecast of this metric's value lead
	// ahead, made from its own history with a daily or weekly season: the
	// forecast proposes replicas as the metric does (same target) and the
	// metric's proposal is the larger of the two, so a forecast only adds
	// capacity; behaviors and bounds apply as usual. No forecast (too little
	// history, no history, a failed read) leaves the metric's own proposal.
	// Pods, Object and External metrics (for a Pods metric, the workload's
	// total load is forecast).
	// +optional
	Forecast *MetricForecast `json:"forecast,omitempty"`
}

// ForecastSeason is the period a forecast repeats.
// +kubebuilder:validation:Enum=Daily;Weekly
type ForecastSeason string

// Forecast seasons.
const (
	SeasonDaily  ForecastSeason = "Daily"
	SeasonWeekly ForecastSeason = "Weekly"
)

// ForecastMethod is how a forecast is computed.
// +kubebuilder:validation:Enum=LevelPeak;LevelCorrected;SeasonalMax;SeasonalNaive;HoltWinters
type ForecastMethod string

// ForecastMode says when a forecast raises the metric's proposal.
// +kubebuilder:validation:Enum=Auto;Always;ReportOnly
type ForecastMode string

// Forecast modes.
const (
	// ForecastAuto applies the floor only while the backtest of the last
	// days shows it paid off (the default).
	ForecastAuto ForecastMode = "Auto"
	// ForecastAlways applies the floor whatever the backtest says.
	ForecastAlways ForecastMode = "Always"
	// ForecastReportOnly computes and backtests the forecast and reports
	// both, and never applies the floor.
	ForecastReportOnly ForecastMode = "ReportOnly"
)

// MetricForecast configures a metric's forecast.
type MetricForecast struct {
	// season is the period the load repeats: Daily (default) or Weekly.
	// +optional
	Season ForecastSeason `json:"season,omitempty"`

	// method is how the forecast is computed from the past seasons (see
	// docs/forecast.md; default LevelPeak, chosen on the training spans of
	// replays of real traffic: the median over the last four seasons of the
	// peak over the start-up window ahead, each scaled by the recent level
	// over that season's level at the same time).
	// +optional
	Method ForecastMethod `json:"method,omitempty"`

	// podStartup is how long a new pod of the target takes to become ready
	// (default 60s); it sets the default lead.
	// +optional
	PodStartup *metav1.Duration `json:"podStartup,omitempty"`

	// lead is how far ahead the forecast looks: default podStartup plus one
	// sync period of 15s, so that pods started now are ready when the
	// forecast load arrives. Less than the season.
	// +optional
	Lead *metav1.Duration `json:"lead,omitempty"`

	// mode says when the forecast raises the proposal. Auto (default):
	// the forecast is backtested on the metric's own history every hour —
	// over the last days, the floor it would have set against the
	// metric's target alone — and applied only while it paid off (it left
	// at most 0.9 of the shortfall a lower target spending the same
	// replica-hours would have left, for at most 5 % more replica-hours).
	// Always: applied whatever the backtest says. ReportOnly: forecast and
	// backtest are computed and reported (condition Forecasting, the
	// decision record), never applied.
	// +optional
	Mode ForecastMode `json:"mode,omitempty"`
}

// MissingPolicy says how to read a metric that returns no value.
type MissingPolicy string

// MissingAsZero reads a missing value as 0.
const MissingAsZero MissingPolicy = "Zero"

// ClusterProportionalSource holds cluster-proportional-autoscaler's
// parameters, inline or from its ConfigMap, and which nodes to count.
//
// +kubebuilder:validation:XValidation:rule="[has(self.linear), has(self.ladder), has(self.configMapRef)].filter(x, x).size() == 1",message="set exactly one of linear, ladder and configMapRef"
type ClusterProportionalSource struct {
	// linear: replicas = max(ceil(cores / coresPerReplica), ceil(nodes /
	// nodesPerReplica)), clamped to [min, max].
	// +optional
	Linear *LinearParams `json:"linear,omitempty"`
	// ladder: replicas from the step functions coresToReplicas and
	// nodesToReplicas, the larger of the two.
	// +optional
	Ladder *LadderParams `json:"ladder,omitempty"`
	// nodeSelector counts only the nodes it matches (CPA's --nodelabels);
	// all nodes when unset.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// configMapRef reads the parameters from a cluster-proportional-
	// autoscaler ConfigMap in the Autoscaler's namespace (one key, linear
	// or ladder, holding JSON), watched: a change applies at once; an invalid
	// or deleted ConfigMap keeps the last good parameters and is reported.
	// +optional
	ConfigMapRef *ConfigMapKeyRef `json:"configMapRef,omitempty"`
}

// LinearParams are cluster-proportional-autoscaler's linear parameters,
// with its JSON names.
//
// +kubebuilder:validation:XValidation:rule="(has(self.coresPerReplica) && self.coresPerReplica > 0) || (has(self.nodesPerReplica) && self.nodesPerReplica > 0)",message="set coresPerReplica or nodesPerReplica (cluster-proportional-autoscaler rejects both zero)"
// +kubebuilder:validation:XValidation:rule="!has(self.max) || self.max == 0 || self.max >= (has(self.min) && self.min > 0 ? self.min : 1)",message="max must be 0 (no limit) or at least min",fieldPath=".max"
type LinearParams struct {
	// coresPerReplica: one replica per this many cores (0: cores not counted).
	// +optional
	// +kubebuilder:validation:Minimum=0
	CoresPerReplica float64 `json:"coresPerReplica,omitempty"`
	// nodesPerReplica: one replica per this many nodes (0: nodes not counted).
	// +optional
	// +kubebuilder:validation:Minimum=0
	NodesPerReplica float64 `json:"nodesPerReplica,omitempty"`
	// min is the least replicas (0 reads as 1, as CPA does).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Min int32 `json:"min,omitempty"`
	// max is the most replicas (0: no limit).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Max int32 `json:"max,omitempty"`
	// preventSinglePointFailure: at least 2 replicas when the cluster has
	// more than one node (even above max, as CPA).
	// +optional
	PreventSinglePointFailure bool `json:"preventSinglePointFailure,omitempty"`
	// includeUnschedulableNodes counts cordoned and NotReady nodes too.
	// +optional
	IncludeUnschedulableNodes bool `json:"includeUnschedulableNodes,omitempty"`
}

// LadderParams are cluster-proportional-autoscaler's ladder parameters:
// rows of [threshold, replicas].
//
// +kubebuilder:validation:XValidation:rule="(has(self.coresToReplicas) && size(self.coresToReplicas) > 0) || (has(self.nodesToReplicas) && size(self.nodesToReplicas) > 0)",message="an empty ladder gives 0 replicas (cluster-proportional-autoscaler would scale the target to zero): give coresToReplicas or nodesToReplicas"
type LadderParams struct {
	// coresToReplicas: [[cores, replicas], ...].
	// +optional
	// +listType=atomic
	CoresToReplicas [][]int64 `json:"coresToReplicas,omitempty"`
	// nodesToReplicas: [[nodes, replicas], ...].
	// +optional
	// +listType=atomic
	NodesToReplicas [][]int64 `json:"nodesToReplicas,omitempty"`
	// includeUnschedulableNodes counts cordoned and NotReady nodes too.
	// +optional
	IncludeUnschedulableNodes bool `json:"includeUnschedulableNodes,omitempty"`
}

// ConfigMapKeyRef names a ConfigMap in the Autoscaler's namespace and,
// optionally, its key.
type ConfigMapKeyRef struct {
	// name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// key holding the parameters, "linear" or "ladder"; unset, the ConfigMap
	// must hold exactly one of them.
	// +optional
	// +kubebuilder:validation:Enum=linear;ladder
	Key string `json:"key,omitempty"`
}

// ScaleToZeroSpec configures scaling to zero with activation thresholds.
type ScaleToZeroSpec struct {
	// after is how long every metric must be at or below its activation
	// before the autoscaler scales to zero (through the scale-down
	// behavior). Default 5m.
	// +optional
	After *metav1.Duration `json:"after,omitempty"`
}

// FallbackPolicy is what to do when metrics are failed or stale for long.
type FallbackPolicy string

// Fallback policies.
const (
	// FallbackHold keeps the current replicas.
	FallbackHold FallbackPolicy = "Hold"
	// FallbackReplicas goes to fallback.replicas (through the behaviors).
	FallbackReplicas FallbackPolicy = "Replicas"
	// FallbackAtLeast goes to max(current, fallback.replicas).
	FallbackAtLeast FallbackPolicy = "AtLeast"
)

// FallbackSpec configures what happens when a metric is failed (read error,
// no sample, NaN) or stale (its newest sample older than maxAge) for longer
// than after.
//
// +kubebuilder:validation:XValidation:rule="!has(self.policy) || self.policy == 'Hold' || has(self.replicas)",message="replicas is required with policy Replicas or AtLeast",fieldPath=".replicas",reason=FieldValueRequired
type FallbackSpec struct {
	// policy: Hold (default), Replicas or AtLeast.
	// +optional
	// +kubebuilder:validation:Enum=Hold;Replicas;AtLeast
	Policy FallbackPolicy `json:"policy,omitempty"`
	// replicas for the Replicas and AtLeast policies.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Replicas *int32 `json:"replicas,omitempty"`
	// after is how long a metric must be failed or stale before the
	// fallback applies. Default 1m.
	// +optional
	After *metav1.Duration `json:"after,omitempty"`
	// maxAge is the oldest a metric's sample may be (by the timestamp the
	// metrics API returns) before the metric counts as stale. Unset: age is
	// not checked.
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// MetricStatus is an autoscaling/v2 MetricStatus (its fields inline) or the
// status of a ClusterProportional metric.
type MetricStatus struct {
	autoscalingv2.MetricStatus `json:",inline"`

	// clusterProportional is the cluster size a ClusterProportional metric
	// counted and the replicas it proposed.
	// +optional
	ClusterProportional *ClusterProportionalStatus `json:"clusterProportional,omitempty"`
}

// ClusterProportionalStatus is what a ClusterProportional metric counted, as
// cluster-proportional-autoscaler counts it.
type ClusterProportionalStatus struct {
	// nodes and cores are all the nodes the selector matches and their
	// allocatable cores (rounded up).
	Nodes int32 `json:"nodes"`
	Cores int32 `json:"cores"`
	// schedulableNodes and schedulableCores count only nodes that are not
	// cordoned and Ready.
	SchedulableNodes int32 `json:"schedulableNodes"`
	SchedulableCores int32 `json:"schedulableCores"`
	// replicas is the count the metric proposed.
	Replicas int32 `json:"replicas"`
}
