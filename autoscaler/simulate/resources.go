package simulate

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// isResource reports whether spec is a Resource or ContainerResource metric:
// a per-pod metric whose load the replay conserves, as a Pods metric's.
func isResource(spec autoscalingv2.MetricSpec) bool {
	return spec.Type == autoscalingv2.ResourceMetricSourceType || spec.Type == autoscalingv2.ContainerResourceMetricSourceType
}

// isPerPod reports whether spec's values are per pod (Pods, Resource,
// ContainerResource): the series is the load, divided among the ready pods.
func isPerPod(spec autoscalingv2.MetricSpec) bool {
	return spec.Type == autoscalingv2.PodsMetricSourceType || isResource(spec)
}

// utilizationTarget is the per-pod usage, in milli-units, at which a
// Utilization target is met: the request of one simulated pod
// (replicas.Requests, as the controller computes the denominator) times the
// target percentage. It fails, naming the metric, when the pods' requests are
// unknown or lack the resource.
func utilizationTarget(spec autoscalingv2.MetricSpec, template *replicas.Pod) (float64, error) {
	src := evaluation.ResourceOf(spec)
	what := fmt.Sprintf("%s metric %s", strings.ToLower(string(spec.Type)), src.Name)
	if src.Container != "" {
		what += " of container " + src.Container
	}
	if template == nil {
		return 0, fmt.Errorf("%s: a %s target needs the pods' requests: give the scale target's Deployment, StatefulSet or ReplicaSet with -f, or --pod-requests", what, autoscalingv2.UtilizationMetricType)
	}
	pod := *template
	pod.Name = "template"
	requests, err := replicas.Requests([]replicas.Pod{pod}, src.Name, src.Container)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	r := requests[pod.Name]
	if r <= 0 {
		return 0, fmt.Errorf("%s: the pods request no %s, so a %s target has no meaning", what, src.Name, autoscalingv2.UtilizationMetricType)
	}
	return float64(r) * float64(*src.Target.AverageUtilization) / 100, nil
}

// perPodTarget is the per-pod usage, in milli-units, at which a Resource or
// ContainerResource metric is on target; see utilizationTarget.
func perPodTarget(kind evaluation.MetricKind, spec autoscalingv2.MetricSpec, template *replicas.Pod) (float64, error) {
	if kind == evaluation.ResourceUtilization || kind == evaluation.ContainerResourceUtilization {
		return utilizationTarget(spec, template)
	}
	return float64(evaluation.ResourceOf(spec).Target.AverageValue.MilliValue()), nil
}
