package evaluation

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Reading is what the metrics APIs returned for one metric of the spec: the
// observation a proposal is computed from. Exactly one of Samples (Resource,
// ContainerResource, Pods), Value (Object) or Values (External) is meaningful,
// unless Err is set.
type Reading struct {
	Spec autoscalingv2.MetricSpec
	// FetchErr is the metrics API's failure to answer; Empty is true when it
	// answered with no value. Evaluate reads an empty answer of a metric
	// with treatMissingAs Zero as 0, and otherwise sets Err to FetchErr as
	// upstream's replica calculator words it (FetchError).
	FetchErr error
	Empty    bool
	// Err is why the metric could not be read (an invalid metric selector,
	// or the worded FetchErr). Propose turns it into a failure.
	Err     error
	Samples replicas.Samples
	Value   int64
	Values  []int64
	// Timestamp is the timestamp the metrics API reported (upstream's: the
	// first item's).
	Timestamp time.Time
}

// Shared are the facts every metric of one evaluation reads.
type Shared struct {
	// SpecReplicas and StatusReplicas are the scale's spec and status replicas.
	SpecReplicas   int32
	StatusReplicas int32
	// Pods are the pods the scale's selector matches.
	Pods       []replicas.Pod
	Tolerances replicas.Tolerances
	Timing     replicas.PodTiming
}

// Evaluated is one metric's proposal with the status upstream reports for it
// and the calculation that produced it (zero when the metric failed).
type Evaluated struct {
	Proposal Proposal
	// Status is the metric's entry in status.currentMetrics; a failed metric
	// leaves a zero entry, as upstream does.
	Status autoscalingv2.MetricStatus
	Result replicas.Result
}

// Propose computes the proposal of one metric from its reading, as
// upstream's computeReplicasForMetric. It is pure.
func Propose(r Reading, s Shared) Evaluated {
	kind, err := Classify(r.Spec)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return Evaluated{Proposal: failure(r.Spec, err)}
	}
	var res replicas.Result
	var status autoscalingv2.MetricStatus
	switch r.Spec.Type {
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		res, status, err = proposeResource(r, s, kind)
	case autoscalingv2.PodsMetricSourceType:
		res, status, err = proposePods(r, s)
	case autoscalingv2.ObjectMetricSourceType:
		res, status, err = proposeObject(r, s, kind)
	case autoscalingv2.ExternalMetricSourceType:
		res, status, err = proposeExternal(r, s, kind)
	}
	if err != nil {
		return Evaluated{Proposal: failure(r.Spec, err)}
	}
	return Evaluated{Proposal: success(r.Spec, res.Replicas, res.Timestamp), Status: status, Result: res}
}

// propose computes every HPA metric's proposal (filling r.Metrics and the
// metric statuses) and returns the proposals with extra after them.
func (r *Result) propose(extra []Proposal) []Proposal {
	in := &r.in
	shared := Shared{
		SpecReplicas: in.Scale.SpecReplicas, StatusReplicas: in.Scale.StatusReplicas, Pods: in.Pods,
		Tolerances: replicas.TolerancesFor(in.Settings.Tolerance, in.Spec.HPA.Behavior),
		Timing: replicas.PodTiming{
			CPUInitializationPeriod: in.Settings.CPUInitializationPeriod,
			InitialReadinessDelay:   in.Settings.InitialReadinessDelay,
			Now:                     in.Now,
		},
	}
	n := len(in.Readings)
	metrics, statuses, proposals := in.Scratch.buffers(n, len(extra))
	for i := range in.Readings {
		rd := in.Readings[i]
		resolve(&rd, in.Spec.MetricOptions, i, in.Namespace, in.Now)
		e := Propose(rd, shared)
		metrics[i] = Metric{Reading: rd, Evaluated: e}
		statuses[i] = e.Status
		proposals = append(proposals, e.Proposal)
	}
	r.Metrics, r.statuses = metrics, statuses
	return append(proposals, extra...)
}

// resolve applies treatMissingAs Zero to an empty answer of an Object or
// External metric, and otherwise words a failed read as upstream's replica
// calculator does.
func resolve(rd *Reading, opts []MetricOptions, i int, namespace string, now time.Time) {
	if rd.FetchErr == nil {
		return
	}
	zero := rd.Empty && i < len(opts) && opts[i].MissingAsZero &&
		(rd.Spec.Type == autoscalingv2.ObjectMetricSourceType || rd.Spec.Type == autoscalingv2.ExternalMetricSourceType)
	if zero {
		rd.Value, rd.Values, rd.Timestamp, rd.FetchErr = 0, []int64{0}, now, nil
		return
	}
	rd.Err = fetchError(rd.Spec, namespace, rd.FetchErr)
}

// success is the Proposal of a metric that produced replicas.
func success(spec autoscalingv2.MetricSpec, replicas int32, timestamp time.Time) Proposal {
	return Proposal{Metric: metricDescription(spec), Replicas: replicas, Timestamp: timestamp}
}

// milli is a DecimalSI quantity of v milli-units.
func milli(v int64) *resource.Quantity {
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}
