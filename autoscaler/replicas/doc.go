// Package replicas computes the replica count one metric asks for, with the
// rules of kube-controller-manager v1.37's HorizontalPodAutoscaler.
//
// Every function here is pure: it takes plain values (pod facts, metric
// samples in milli-units, targets, tolerances, configured durations and the
// current time) and returns a Result that says how many replicas the metric
// proposes and why. Nothing here talks to a client, reads a clock, logs or
// records events; callers own all of that.
//
// Supported metric sources and targets:
//
//   - Resource / ContainerResource, Utilization target: ResourceUtilization.
//   - Resource / ContainerResource, AverageValue target: PodAverage with the
//     resource name set (cpu readiness rules apply to cpu).
//   - Pods, AverageValue target: PodAverage with no resource name.
//   - Object, Value target: ObjectValue. AverageValue target: ObjectAverageValue.
//   - External, Value target: ExternalValue. AverageValue target:
//     ExternalAverageValue.
//
// Values are milli-units throughout (resource.Quantity.MilliValue), as upstream.
package replicas
