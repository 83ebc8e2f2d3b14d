package evaluation

import (
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
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

// milli is a DecimalSI quantity of v milli-units.
func milli(v int64) *resource.Quantity {
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}

// usageQuantity formats a resource usage as upstream reports it: memory in
// BinarySI (as metrics-server does), everything else in DecimalSI.
func usageQuantity(name corev1.ResourceName, v int64) *resource.Quantity {
	if name == corev1.ResourceMemory {
		return resource.NewMilliQuantity(v, resource.BinarySI)
	}
	return milli(v)
}

// Scratch holds the buffers of the proposals for a caller that runs many
// evaluations one after the other (a replay). The zero Scratch is ready; a
// Result made with it is valid until the Scratch's next use.
type Scratch struct {
	conds     []autoscalingv2.HorizontalPodAutoscalerCondition
	metrics   []Metric
	statuses  []autoscalingv2.MetricStatus
	proposals []Proposal
}

// buffers returns zeroed slices of n entries (with room for extra metrics
// and proposals), from s when set.
func (s *Scratch) buffers(n, extra int) ([]Metric, []autoscalingv2.MetricStatus, []Proposal) {
	if s == nil {
		return make([]Metric, n, n+extra), make([]autoscalingv2.MetricStatus, n), make([]Proposal, 0, n+extra)
	}
	if cap(s.metrics) < n+extra {
		s.metrics = make([]Metric, n, n+extra)
	}
	if cap(s.statuses) < n {
		s.statuses = make([]autoscalingv2.MetricStatus, n)
	}
	if cap(s.proposals) < n+extra {
		s.proposals = make([]Proposal, 0, n+extra)
	}
	s.metrics, s.statuses = s.metrics[:n], s.statuses[:n]
	clear(s.metrics)
	clear(s.statuses)
	return s.metrics, s.statuses, s.proposals[:0]
}

// MetricKind is the calculation a metric spec calls for; each maps to one function
// of package replicas.
type MetricKind string

// Kinds of metric calculation.
const (
	ResourceUtilization          MetricKind = "ResourceUtilization"          // replicas.ResourceUtilization
	ResourceAverageValue         MetricKind = "ResourceAverageValue"         // replicas.PodAverage with the resource
	ContainerResourceUtilization MetricKind = "ContainerResourceUtilization" // replicas.ResourceUtilization with the container
	ContainerResourceAverage     MetricKind = "ContainerResourceAverageValue"
	PodsAverageValue             MetricKind = "PodsAverageValue"     // replicas.PodAverage without a resource
	ObjectValue                  MetricKind = "ObjectValue"          // replicas.ObjectValue
	ObjectAverageValue           MetricKind = "ObjectAverageValue"   // replicas.ObjectAverageValue
	ExternalValue                MetricKind = "ExternalValue"        // replicas.ExternalValue
	ExternalAverageValue         MetricKind = "ExternalAverageValue" // replicas.ExternalAverageValue
)

// Classify returns the calculation spec calls for, choosing the target field
// in upstream's order (an averageValue wins for Resource and External; Object
// follows target.type). A spec upstream would reject returns upstream's error
// text (or, where upstream would crash on a nil field, a similar one).
func Classify(spec autoscalingv2.MetricSpec) (MetricKind, error) {
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			return "", errors.New("invalid resource metric source: resource is not set")
		}
		return resourceKind(spec.Resource.Target, ResourceAverageValue, ResourceUtilization)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			return "", errors.New("invalid resource metric source: containerResource is not set")
		}
		return resourceKind(spec.ContainerResource.Target, ContainerResourceAverage, ContainerResourceUtilization)
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil || spec.Pods.Target.AverageValue == nil {
			return "", errors.New("invalid pods metric source: no average value target was set")
		}
		return PodsAverageValue, nil
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object != nil {
			t := spec.Object.Target
			if t.Type == autoscalingv2.ValueMetricType && t.Value != nil {
				return ObjectValue, nil
			}
			if t.Type == autoscalingv2.AverageValueMetricType && t.AverageValue != nil {
				return ObjectAverageValue, nil
			}
		}
		return "", errors.New("invalid object metric source: neither a value target nor an average value target was set")
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External != nil && spec.External.Target.AverageValue != nil {
			return ExternalAverageValue, nil
		}
		if spec.External != nil && spec.External.Target.Value != nil {
			return ExternalValue, nil
		}
		return "", errors.New("invalid external metric source: neither a value target nor an average value target was set")
	}
	return "", fmt.Errorf("unknown metric source type %q", string(spec.Type))
}

func resourceKind(t autoscalingv2.MetricTarget, average, utilization MetricKind) (MetricKind, error) {
	if t.AverageValue != nil {
		return average, nil
	}
	if t.AverageUtilization == nil {
		return "", errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	return utilization, nil
}

// metricDescription names a metric as upstream's ScalingActive message and
// rescale events do, including upstream's wording of an Object AverageValue
// metric as "external metric". An invalid spec yields "".
func metricDescription(spec autoscalingv2.MetricSpec) string {
	kind, err := Classify(spec)
	if err != nil {
		return ""
	}
	switch kind {
	case ResourceAverageValue:
		return fmt.Sprintf("%s resource", spec.Resource.Name)
	case ContainerResourceAverage:
		return fmt.Sprintf("%s resource", spec.ContainerResource.Name)
	case ResourceUtilization:
		return fmt.Sprintf("%s resource utilization (percentage of request)", spec.Resource.Name)
	case ContainerResourceUtilization:
		return fmt.Sprintf("%s container resource utilization (percentage of request)", spec.ContainerResource.Name)
	case PodsAverageValue:
		return fmt.Sprintf("pods metric %s", spec.Pods.Metric.Name)
	case ObjectValue:
		return fmt.Sprintf("%s metric %s", spec.Object.DescribedObject.Kind, spec.Object.Metric.Name)
	case ObjectAverageValue:
		return fmt.Sprintf("external metric %s(%+v)", spec.Object.Metric.Name, spec.Object.Metric.Selector)
	}
	return fmt.Sprintf("external metric %s(%+v)", spec.External.Metric.Name, spec.External.Metric.Selector)
}

// success is the Proposal of a metric that produced replicas.
func success(spec autoscalingv2.MetricSpec, replicas int32, timestamp time.Time) Proposal {
	return Proposal{Metric: metricDescription(spec), Replicas: replicas, Timestamp: timestamp}
}

// failure is the Proposal of a metric that failed with cause: the error a
// replicas function returned, a FetchError, or the error of Classify. Its Err
// and Condition carry upstream's wording for the metric's kind; the
// condition's reason and cause's wrapped form are what upstream's FailedGet*
// warning event shows.
func failure(spec autoscalingv2.MetricSpec, cause error) Proposal {
	kind, _ := Classify(spec)
	var reason string
	var inner, outer error
	switch spec.Type {
	case autoscalingv2.ObjectMetricSourceType:
		reason, inner = "FailedGetObjectMetric", cause
		wrapped := cause
		if kind == ObjectAverageValue {
			wrapped = fmt.Errorf("failed to get %s object metric: %w", spec.Object.Metric.Name, cause)
		}
		outer = fmt.Errorf("failed to get object metric value: %w", wrapped)
	case autoscalingv2.PodsMetricSourceType:
		reason, inner = "FailedGetPodsMetric", cause
		outer = fmt.Errorf("failed to get pods metric value: %w", cause)
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		reason, inner, outer = resourceFailure(spec, kind, cause)
	case autoscalingv2.ExternalMetricSourceType:
		reason, inner = "FailedGetExternalMetric", cause
		outer = externalFailure(spec, kind, cause)
	default:
		reason, inner, outer = "InvalidMetricSourceType", cause, cause
	}
	return Proposal{
		Err: outer,
		Condition: scalingActive(corev1.ConditionFalse, reason,
			fmt.Sprintf("the HPA was unable to compute the replica count: %v", inner)),
	}
}

func resourceFailure(spec autoscalingv2.MetricSpec, kind MetricKind, cause error) (string, error, error) {
	reason, name, outerFormat, subject := "FailedGetResourceMetric", corev1.ResourceName(""), "failed to get %s resource metric value: %w", ""
	if spec.Resource != nil {
		name, subject = spec.Resource.Name, string(spec.Resource.Name)
	}
	if spec.Type == autoscalingv2.ContainerResourceMetricSourceType {
		reason, outerFormat = "FailedGetContainerResourceMetric", "failed to get %s container metric value: %w"
		if spec.ContainerResource != nil {
			name, subject = spec.ContainerResource.Name, spec.ContainerResource.Container
		}
	}
	inner := cause
	switch kind {
	case ResourceAverageValue, ContainerResourceAverage:
		inner = fmt.Errorf("failed to get %s usage: %w", name, cause)
	case ResourceUtilization, ContainerResourceUtilization:
		inner = fmt.Errorf("failed to get %s utilization: %w", name, cause)
	}
	return reason, inner, fmt.Errorf(outerFormat, subject, inner)
}

func externalFailure(spec autoscalingv2.MetricSpec, kind MetricKind, cause error) error {
	name := ""
	if spec.External != nil {
		name = spec.External.Metric.Name
	}
	wrapped := cause
	switch kind {
	case ExternalAverageValue:
		wrapped = fmt.Errorf("failed to get %s external metric: %w", name, cause)
	case ExternalValue:
		wrapped = fmt.Errorf("failed to get external metric %s: %w", name, cause)
	}
	return fmt.Errorf("failed to get %s external metric value: %w", name, wrapped)
}

// fetchError wraps an error from reading a metric's values as upstream's
// replica calculator does, before failure wraps it further. namespace is the
// autoscaler's namespace.
func fetchError(spec autoscalingv2.MetricSpec, namespace string, err error) error {
	switch {
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		return fmt.Errorf("unable to get metrics for resource %s: %w", spec.Resource.Name, err)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		return fmt.Errorf("unable to get metrics for resource %s: %w", spec.ContainerResource.Name, err)
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		return fmt.Errorf("unable to get metric %s: %w", spec.Pods.Metric.Name, err)
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		o := spec.Object
		return fmt.Errorf("unable to get metric %s on %s %s/%s: %w", o.Metric.Name, o.DescribedObject.Kind, namespace, o.DescribedObject.Name, err)
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		e := spec.External
		return fmt.Errorf("unable to get external metric %s/%s/%+v: %w", namespace, e.Metric.Name, e.Metric.Selector, err)
	}
	return err
}

// conditions returns a copy of cs the result may change, in s's buffer when
// set (cs may be that buffer: the status of the Scratch's last result).
func (s *Scratch) conditions(cs []autoscalingv2.HorizontalPodAutoscalerCondition) []autoscalingv2.HorizontalPodAutoscalerCondition {
	if s == nil {
		return append([]autoscalingv2.HorizontalPodAutoscalerCondition(nil), cs...)
	}
	s.conds = append(s.conds[:0], cs...)
	return s.conds
}
