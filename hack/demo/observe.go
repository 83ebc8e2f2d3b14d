package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ebbflow/ebbflow/test/simulator"
)

// workloadState is one Deployment and its HPA at one moment.
type workloadState struct {
	Replicas int32  // Deployment status.replicas
	Ready    int32  // Deployment status.readyReplicas
	Desired  int32  // HPA status.desiredReplicas
	Metric   string // the HPA's current metric value as it sees it
	Cond     string // HPA conditions, short form
}

// sample is the state of the demo at one moment.
type sample struct {
	T       time.Duration
	Load    map[string]float64 // offered requests per second by service
	PerPod  map[string]float64 // requests per second per Ready pod
	Produce float64            // orders produced per second
	Queue   float64            // orders waiting
	W       map[string]workloadState
}

// observe reads the simulator's status and every example Deployment and HPA.
// Errors reading one object are shown in its conditions column, not returned:
// the table keeps going while a component is briefly unavailable.
func observe(ctx context.Context, c kubernetes.Interface, st simulator.Status) sample {
	s := sample{T: st.Elapsed, Load: map[string]float64{}, PerPod: map[string]float64{}, W: map[string]workloadState{}}
	for _, sv := range st.Services {
		s.Load[sv.Service], s.PerPod[sv.Service] = sv.Offered, sv.PerPod
	}
	for _, q := range st.Queues {
		s.Produce, s.Queue = q.Produce, q.Depth
	}
	for _, name := range workloads {
		var w workloadState
		if d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			w.Replicas, w.Ready = d.Status.Replicas, d.Status.ReadyReplicas
		} else {
			w.Cond = "deployment: " + err.Error()
		}
		if h, err := c.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
			w.Desired, w.Metric, w.Cond = h.Status.DesiredReplicas, currentMetric(h), conditions(h)
		} else {
			w.Cond = "hpa: " + err.Error()
		}
		s.W[name] = w
	}
	return s
}

// currentMetric returns the first current metric value of the HPA with one
// decimal, or "-".
func currentMetric(h *autoscalingv2.HorizontalPodAutoscaler) string {
	for _, m := range h.Status.CurrentMetrics {
		var v *autoscalingv2.MetricValueStatus
		switch m.Type {
		case autoscalingv2.PodsMetricSourceType:
			if m.Pods != nil {
				v = &m.Pods.Current
			}
		case autoscalingv2.ObjectMetricSourceType:
			if m.Object != nil {
				v = &m.Object.Current
			}
		case autoscalingv2.ExternalMetricSourceType:
			if m.External != nil {
				v = &m.External.Current
			}
		}
		switch {
		case v == nil:
		case v.AverageValue != nil:
			return fmt.Sprintf("%.1f", v.AverageValue.AsApproximateFloat64())
		case v.Value != nil:
			return fmt.Sprintf("%.1f", v.Value.AsApproximateFloat64())
		}
	}
	return "-"
}

// conditions summarises the HPA conditions: "ok" when ScalingActive is True,
// otherwise the reason it is not; "+limited" when ScalingLimited is True;
// "+unable" when AbleToScale is False.
func conditions(h *autoscalingv2.HorizontalPodAutoscaler) string {
	out := "pending"
	var extra []string
	for _, c := range h.Status.Conditions {
		switch c.Type {
		case autoscalingv2.ScalingActive:
			if c.Status == corev1.ConditionTrue {
				out = "ok"
			} else {
				out = c.Reason
			}
		case autoscalingv2.ScalingLimited:
			if c.Status == corev1.ConditionTrue {
				extra = append(extra, "limited")
			}
		case autoscalingv2.AbleToScale:
			if c.Status == corev1.ConditionFalse {
				extra = append(extra, "unable:"+c.Reason)
			}
		}
	}
	if len(extra) > 0 {
		out += "+" + strings.Join(extra, "+")
	}
	return out
}

// tableHeader is printed above the rows; it matches printRow's columns.
const tableHeader = "   time │ web req/s  pods desired  per-pod  hpa sees │ api req/s  pods desired │ orders/s  queue  workers desired │ HPA conditions (web api worker)"

// printRow writes one table row.
func printRow(w io.Writer, s sample) {
	web, api, wk := s.W["web"], s.W["api"], s.W["worker"]
	fmt.Fprintf(w, "%7s │ %9.1f  %4d %7d  %7.1f  %8s │ %9.1f  %4d %7d │ %8.1f  %5.0f  %7d %7d │ %s %s %s\n",
		fmtDur(s.T), s.Load["web"], web.Ready, web.Desired, s.PerPod["web"], web.Metric,
		s.Load["api"], api.Ready, api.Desired,
		s.Produce, s.Queue, wk.Ready, wk.Desired,
		web.Cond, api.Cond, wk.Cond)
}

func fmtDur(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
