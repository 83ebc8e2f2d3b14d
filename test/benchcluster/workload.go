package benchcluster

import (
	"fmt"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Workload shape: every HPA has MetricsPerHPA External metrics, each at
// AverageValue TargetPerReplica, read with the selector hpa=<name>.
const (
	MetricsPerHPA    = 3
	TargetPerReplica = 10
	// MetricPrefix names the metrics: bench_q0, bench_q1, ...
	MetricPrefix = "bench_q"
	// hpaLabel is the label of the metric selector naming the HPA.
	hpaLabel = "hpa"
)

// Objects returns the Deployment and the HPA of object i. The Deployment
// has one replica whose pod is never scheduled (the cluster has no
// scheduler, and External AverageValue metrics do not read pods), so only
// the controllers and the API server work. Scale-down stabilization is off
// so that the scaling variant scales both ways every change.
func Objects(namespace string, i int) (*appsv1.Deployment, *autoscalingv2.HorizontalPodAutoscaler) {
	name := fmt.Sprintf("w%05d", i)
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	var metrics []autoscalingv2.MetricSpec
	for k := range MetricsPerHPA {
		metrics = append(metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: fmt.Sprintf("%s%d", MetricPrefix, k),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{hpaLabel: name}}},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(TargetPerReplica, resource.DecimalSI)},
		}})
	}
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10, Metrics: metrics,
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
			},
		},
	}
	return d, h
}

// Values is the metrics API's answer: TargetPerReplica × the replicas of
// the current phase. Steady: always 1 replica's worth. Scaling: phase k
// (k = whole periods since Start, 0 before) asks for 2 replicas when k is
// odd and 1 when it is even, so every HPA scales at every change.
type Values struct {
	mu      sync.Mutex
	scaling bool
	start   time.Time
	period  time.Duration
}

// Steady makes every answer 1 replica's worth.
func (v *Values) Steady() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.scaling = false
}

// Scale starts changing the answers every period from start.
func (v *Values) Scale(start time.Time, period time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.scaling, v.start, v.period = true, start, period
}

// Phase returns the phase at now (0 when steady or before the start).
func (v *Values) Phase(now time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.scaling || now.Before(v.start) {
		return 0
	}
	return int(now.Sub(v.start) / v.period)
}

// Boundary returns when phase k began.
func (v *Values) Boundary(k int) time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.start.Add(time.Duration(k) * v.period)
}

// ReplicasAt is the replica count phase k asks for.
func ReplicasAt(k int) int32 { return 1 + int32(k%2) }

// Milli is the answer (milli-units) at now.
func (v *Values) Milli(now time.Time) int64 {
	return int64(ReplicasAt(v.Phase(now))) * TargetPerReplica * 1000
}

// Reaction returns how long after the change it answers a /scale write of
// replicas at w came: the latest phase boundary (k ≥ 1) asking for that
// count at or before w. ok is false for a write no change asked for.
func (v *Values) Reaction(w time.Time, replicas int32) (time.Duration, bool) {
	k := v.Phase(w)
	for ; k >= 1; k-- {
		if ReplicasAt(k) == replicas {
			return w.Sub(v.Boundary(k)), true
		}
	}
	return 0, false
}

// ReadLog keeps, per HPA, the times its first metric was asked for.
type ReadLog struct {
	mu    sync.Mutex
	times map[string][]time.Time
}

// Observe records a question for metric of the HPA named by selector.
func (l *ReadLog) Observe(metric, selector string, at time.Time) {
	if metric != MetricPrefix+"0" {
		return
	}
	name, ok := strings.CutPrefix(selector, hpaLabel+"=")
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.times == nil {
		l.times = map[string][]time.Time{}
	}
	l.times[name] = append(l.times[name], at)
}

// Reset forgets everything.
func (l *ReadLog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.times = nil
}

// Snapshot returns a copy of the times by HPA.
func (l *ReadLog) Snapshot() map[string][]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]time.Time, len(l.times))
	for k, v := range l.times {
		out[k] = append([]time.Time(nil), v...)
	}
	return out
}
