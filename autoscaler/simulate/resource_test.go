package simulate

import (
	"math"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

func resourceMetric(name corev1.ResourceName, target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: name, Target: target}}
}

func containerMetric(name corev1.ResourceName, container string, target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType,
		ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: name, Container: container, Target: target}}
}

func utilization(percent int32) autoscalingv2.MetricTarget {
	return autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent}
}

func averageValue(q string) autoscalingv2.MetricTarget {
	v := resource.MustParse(q)
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &v}
}

// webPod requests 150m cpu in app and 50m in its sidecar proxy: 200m a pod.
func webPod() *replicas.Pod {
	return &replicas.Pod{
		Containers: []replicas.Container{
			{Name: "app", Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			{Name: "proxy", Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}},
		},
	}
}

// The load of a Resource metric is conserved as a Pods metric's: per-pod
// usage × ready pods is the recorded load, and the replay settles where the
// controller's calculation is on target.
func TestResourceLoadConserved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		metric  autoscalingv2.MetricSpec
		load    int64 // milli
		initial int32
		want    int32
	}{
		// 1.2 cores at 50% of 200m (100m a pod): 12 pods.
		{"cpu utilization", resourceMetric(corev1.ResourceCPU, utilization(50)), 1200, 2, 12},
		// 450m at 80%: 160m a pod, ceil(450/160) = 3.
		{"cpu utilization down", resourceMetric(corev1.ResourceCPU, utilization(80)), 450, 10, 3},
		// 1 GiB at 256Mi a pod: 4 pods.
		{"memory average value", resourceMetric(corev1.ResourceMemory, averageValue("256Mi")), 1 << 30 * 1000, 1, 4},
		// app's 600m at 50% of its 150m (75m a pod): 8 pods.
		{"container cpu utilization", containerMetric(corev1.ResourceCPU, "app", utilization(50)), 600, 3, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(120, tc.initial)
			cfg.PodStartup, cfg.Template, cfg.ResourceWindow = 30*time.Second, webPod(), time.Minute
			res := run(t, cfg, fastUp(spec(1, 100, tc.metric)), constant(120, tc.load))
			for _, st := range res.Steps {
				if st.Values[0] == Missing {
					t.Fatalf("step %s read no value: %s", st.Time, st.Reason)
				}
				if got := st.Values[0] * int64(st.Ready); math.Abs(float64(got-tc.load)) > float64(st.Ready) {
					t.Errorf("per-pod %d × ready %d = %d, want the load %d", st.Values[0], st.Ready, got, tc.load)
				}
			}
			if got := res.Steps[len(res.Steps)-1].Replicas; got != tc.want {
				t.Errorf("settled on %d replicas, want %d", got, tc.want)
			}
			if r := res.Steps[len(res.Steps)-1].Ratios[0]; r > 1 || r < 0.5 {
				t.Errorf("final usage ratio %v, want on or below target", r)
			}
		})
	}
}

// A cpu scale-up from 2 pods runs as the controller's: the default limit
// (4), then doublings while new pods start (missing, then within the cpu
// initialization period distrusted for one window after they become ready),
// up to the load over the per-pod target.
func TestResourceCPUScaleUp(t *testing.T) {
	cfg := config(40, 2)
	cfg.PodStartup, cfg.Template, cfg.ResourceWindow = 30*time.Second, webPod(), time.Minute
	res := run(t, cfg, spec(1, 100, resourceMetric(corev1.ResourceCPU, utilization(50))), constant(40, 2000))
	var seq []int32
	for _, st := range res.Steps {
		if st.Rescaled {
			seq = append(seq, st.Replicas)
		}
		if st.Failed {
			t.Fatalf("step %s failed: %s", st.Time, st.Reason)
		}
	}
	if len(seq) == 0 || seq[0] != 4 || seq[len(seq)-1] != 20 {
		t.Errorf("scale-ups %v, want 4 first and 2 cores at 100m a pod = 20 last", seq)
	}
}

// A Utilization target needs the pods' requests; without them, or without a
// request of the resource, the replay refuses, naming the metric.
func TestResourceRequestsMissing(t *testing.T) {
	cfg := config(3, 1)
	for _, tc := range []struct {
		name     string
		template *replicas.Pod
		metric   autoscalingv2.MetricSpec
		want     string
	}{
		{"no template", nil, resourceMetric(corev1.ResourceCPU, utilization(50)),
			"spec.metrics[0]: resource metric cpu: a Utilization target needs the pods' requests: give the scale target's Deployment"},
		{"no memory request in proxy", webPod(), resourceMetric(corev1.ResourceMemory, utilization(50)),
			"spec.metrics[0]: resource metric memory: missing request for memory in container proxy"},
		{"no such container", webPod(), containerMetric(corev1.ResourceCPU, "db", utilization(50)),
			"spec.metrics[0]: containerresource metric cpu of container db: container db not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.Template = tc.template
			_, err := Run(c, spec(1, 10, tc.metric), []Series{constant(3, 100)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	// An AverageValue target needs no requests.
	if _, err := Run(cfg, spec(1, 10, resourceMetric(corev1.ResourceCPU, averageValue("100m"))), []Series{constant(3, 100)}); err != nil {
		t.Errorf("AverageValue without requests: %v", err)
	}
}
