package evaluation

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/forecast"
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
	// Series is the metric's recorded history for its forecast (for a
	// Pods metric the workload's total load); nil: not read, and the
	// forecast reports that it has none.
	Series *forecast.Series
	// SeriesErr is why Series is nil (the forecast reports it).
	SeriesErr error
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

func proposePods(r Reading, s Shared) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := r.Spec.Pods
	res, err := replicas.PodAverage(replicas.AverageInput{
		CurrentReplicas: s.SpecReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
		Tolerances: s.Tolerances, Pods: s.Pods, Samples: r.Samples, Timing: s.Timing, Timestamp: r.Timestamp,
	})
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	return res, autoscalingv2.MetricStatus{Type: r.Spec.Type, Pods: &autoscalingv2.PodsMetricStatus{
		Metric:  autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector},
		Current: autoscalingv2.MetricValueStatus{AverageValue: milli(res.Value)},
	}}, nil
}

func proposeObject(r Reading, s Shared, kind MetricKind) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := r.Spec.Object
	status := &autoscalingv2.ObjectMetricStatus{
		DescribedObject: src.DescribedObject,
		Metric:          autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector},
	}
	var res replicas.Result
	var err error
	if kind == ObjectValue {
		res, err = replicas.ObjectValue(r.Value, replicas.ValueInput{
			CurrentReplicas: s.SpecReplicas, Target: src.Target.Value.MilliValue(),
			Tolerances: s.Tolerances, Pods: s.Pods, Timestamp: r.Timestamp,
		})
		status.Current.Value = milli(res.Value)
	} else {
		res, err = replicas.ObjectAverageValue(r.Value, replicas.PerPodInput{
			StatusReplicas: s.StatusReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
			Tolerances: s.Tolerances, Timestamp: r.Timestamp,
		})
		status.Current.AverageValue = milli(res.Value)
	}
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	return res, autoscalingv2.MetricStatus{Type: r.Spec.Type, Object: status}, nil
}

func proposeExternal(r Reading, s Shared, kind MetricKind) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := r.Spec.External
	status := &autoscalingv2.ExternalMetricStatus{
		Metric: autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector},
	}
	var res replicas.Result
	var err error
	if kind == ExternalValue {
		res, err = replicas.ExternalValue(r.Values, replicas.ValueInput{
			CurrentReplicas: s.SpecReplicas, Target: src.Target.Value.MilliValue(),
			Tolerances: s.Tolerances, Pods: s.Pods, Timestamp: r.Timestamp,
		})
		status.Current.Value = milli(res.Value)
	} else {
		res, err = replicas.ExternalAverageValue(r.Values, replicas.PerPodInput{
			StatusReplicas: s.StatusReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
			Tolerances: s.Tolerances, Timestamp: r.Timestamp,
		})
		status.Current.AverageValue = milli(res.Value)
	}
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	return res, autoscalingv2.MetricStatus{Type: r.Spec.Type, External: status}, nil
}

// ResourceSource is the common part of Resource and ContainerResource specs.
type ResourceSource struct {
	Name      corev1.ResourceName
	Container string
	Target    autoscalingv2.MetricTarget
}

// ResourceOf returns the resource part of a Resource or ContainerResource
// spec; spec must have been classified as one.
func ResourceOf(spec autoscalingv2.MetricSpec) ResourceSource {
	if spec.Type == autoscalingv2.ContainerResourceMetricSourceType {
		r := spec.ContainerResource
		return ResourceSource{Name: r.Name, Container: r.Container, Target: r.Target}
	}
	return ResourceSource{Name: spec.Resource.Name, Target: spec.Resource.Target}
}

func proposeResource(r Reading, s Shared, kind MetricKind) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := ResourceOf(r.Spec)
	var res replicas.Result
	var err error
	current := autoscalingv2.MetricValueStatus{}
	if kind == ResourceUtilization || kind == ContainerResourceUtilization {
		res, err = replicas.ResourceUtilization(replicas.UtilizationInput{
			CurrentReplicas: s.SpecReplicas, TargetUtilization: *src.Target.AverageUtilization,
			Resource: src.Name, Container: src.Container, Tolerances: s.Tolerances,
			Pods: s.Pods, Samples: r.Samples, Timing: s.Timing, Timestamp: r.Timestamp,
		})
		utilization := res.Utilization
		current.AverageUtilization = &utilization
	} else {
		res, err = replicas.PodAverage(replicas.AverageInput{
			CurrentReplicas: s.SpecReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
			Resource: src.Name, Tolerances: s.Tolerances,
			Pods: s.Pods, Samples: r.Samples, Timing: s.Timing, Timestamp: r.Timestamp,
		})
	}
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	current.AverageValue = usageQuantity(src.Name, res.Value)
	status := autoscalingv2.MetricStatus{Type: r.Spec.Type}
	if r.Spec.Type == autoscalingv2.ContainerResourceMetricSourceType {
		status.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: src.Name, Container: src.Container, Current: current}
	} else {
		status.Resource = &autoscalingv2.ResourceMetricStatus{Name: src.Name, Current: current}
	}
	return res, status, nil
}

// usageQuantity formats a resource usage as upstream reports it: memory in
// BinarySI (as metrics-server does), everything else in DecimalSI.
func usageQuantity(name corev1.ResourceName, v int64) *resource.Quantity {
	if name == corev1.ResourceMemory {
		return resource.NewMilliQuantity(v, resource.BinarySI)
	}
	return milli(v)
}
