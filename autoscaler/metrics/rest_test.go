package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

func podMetrics(name string, ts time.Time, containers map[string]corev1.ResourceList) *metricsv1beta1.PodMetrics {
	m := &metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Timestamp:  metav1.NewTime(ts),
		Window:     metav1.Duration{Duration: 30 * time.Second},
	}
	for _, n := range []string{"app", "sidecar"} {
		if usage, ok := containers[n]; ok {
			m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: n, Usage: usage})
		}
	}
	return m
}

func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse(q)}
}

func TestRESTPodResources(t *testing.T) {
	ts := time.Unix(5000, 0)
	items := []metricsv1beta1.PodMetrics{
		*podMetrics("a", ts, map[string]corev1.ResourceList{"app": cpu("200m"), "sidecar": cpu("50m")}),
		*podMetrics("b", ts, map[string]corev1.ResourceList{"app": cpu("1"), "sidecar": {}}),
		*podMetrics("c", ts, nil),
	}
	cs := &metricsfake.Clientset{}
	// The fake's tracker files PodMetrics under "podmetricses"; the API
	// serves them as "pods", so answer the list directly.
	cs.AddReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := &metricsv1beta1.PodMetricsList{}
		if a.GetNamespace() == "ns" {
			l.Items = items
		}
		return true, l, nil
	})
	c := metrics.NewREST(cs.MetricsV1beta1(), nil, nil)
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	cases := []struct {
		container string
		want      replicas.Samples
	}{
		// b lacks the sidecar's cpu and c has no containers: both left out.
		{"", replicas.Samples{"a": {Value: 250, Timestamp: ts, Window: 30 * time.Second}}},
		{"app", replicas.Samples{
			"a": {Value: 200, Timestamp: ts, Window: 30 * time.Second},
			"b": {Value: 1000, Timestamp: ts, Window: 30 * time.Second},
		}},
	}
	for _, tc := range cases {
		got, at, err := c.PodResources(context.Background(), "ns", sel, corev1.ResourceCPU, tc.container)
		if err != nil {
			t.Fatal(err)
		}
		if !at.Equal(ts) || len(got) != len(tc.want) {
			t.Fatalf("container %q: got %v at %v, want %v", tc.container, got, at, tc.want)
		}
		for k, v := range tc.want {
			if g := got[k]; g.Value != v.Value || !g.Timestamp.Equal(v.Timestamp) || g.Window != v.Window {
				t.Errorf("container %q pod %s: got %+v, want %+v", tc.container, k, g, v)
			}
		}
	}
	_, _, err := c.PodResources(context.Background(), "other", sel, corev1.ResourceCPU, "")
	if !errors.Is(err, metrics.ErrNoResourceMetrics) {
		t.Errorf("empty namespace: err = %v", err)
	}
}
