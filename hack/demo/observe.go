package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	easv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/test/fakeapp"
)

// workloadState is one Deployment and its HPA (or Autoscaler) at one moment.
type workloadState struct {
	Seen     bool    // the Deployment was read
	Replicas int32   // Deployment status.replicas
	Spec     int32   // Deployment spec.replicas (what the autoscaler wrote)
	Ready    int32   // Deployment status.readyReplicas
	Desired  int32   // HPA (Autoscaler) status.desiredReplicas
	Metric   string  // the HPA's (Autoscaler's) current metric value as it sees it
	Value    float64 // the same as a number (0 when there is none)
	Cond     string  // HPA (Autoscaler) conditions, short form
	Outcome  string  // the Autoscaler's last decision's outcome (ScaledUp, WouldScale, ...)
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

// watched is one autoscaling object the demo observes: an HPA, or an
// ebbflow Autoscaler, named Name, and the Deployment it scales.
type watched struct {
	Name, Deployment string
	Autoscaler       bool
}

// observe reads the fake app's status and every example Deployment and its
// HPA or Autoscaler.
func observe(ctx context.Context, cs clients, st fakeapp.Status) sample {
	s := sample{T: st.Elapsed, Load: map[string]float64{}, PerPod: map[string]float64{}, W: map[string]workloadState{}}
	for _, sv := range st.Services {
		s.Load[sv.Service], s.PerPod[sv.Service] = sv.Offered, sv.PerPod
	}
	for _, q := range st.Queues {
		s.Produce, s.Queue = q.Produce, q.Depth
	}
	for _, name := range workloads {
		s.W[name] = observeWorkload(ctx, cs, namespace, watched{Name: name, Deployment: name, Autoscaler: name == webEbbflow})
	}
	return s
}

// observeWorkload reads one Deployment and its HPA or Autoscaler (whose
// status is an HPA status). Errors reading one object are shown in the
// conditions column, not returned: the table keeps going while a component
// is briefly unavailable.
func observeWorkload(ctx context.Context, cs clients, ns string, wd watched) workloadState {
	var w workloadState
	if d, err := cs.kube.AppsV1().Deployments(ns).Get(ctx, wd.Deployment, metav1.GetOptions{}); err == nil {
		w.Seen, w.Replicas, w.Ready = true, d.Status.Replicas, d.Status.ReadyReplicas
		if d.Spec.Replicas != nil {
			w.Spec = *d.Spec.Replicas
		}
	} else {
		w.Cond = "deployment: " + err.Error()
	}
	var h *autoscalingv2.HorizontalPodAutoscaler
	if wd.Autoscaler {
		a, err := cs.eas.AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, wd.Name, metav1.GetOptions{})
		if err != nil {
			w.Cond = "autoscaler: " + err.Error()
			return w
		}
		h = &autoscalingv2.HorizontalPodAutoscaler{Status: easv1alpha1.ToHPAStatus(&a.Status)}
		if a.Status.LastDecision != nil {
			w.Outcome = string(a.Status.LastDecision.Outcome)
		}
	} else {
		var err error
		if h, err = cs.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, wd.Name, metav1.GetOptions{}); err != nil {
			w.Cond = "hpa: " + err.Error()
			return w
		}
	}
	w.Desired, w.Metric, w.Cond = h.Status.DesiredReplicas, currentMetric(h), conditions(h)
	w.Value = metricValue(h)
	return w
}

// currentMetric returns the first current metric value of the HPA with one
// decimal, or "-".
func currentMetric(h *autoscalingv2.HorizontalPodAutoscaler) string {
	if v := firstValue(h); v != nil {
		return fmt.Sprintf("%.1f", v.AsApproximateFloat64())
	}
	return "-"
}

// metricValue is the first current metric value of the HPA, or 0.
func metricValue(h *autoscalingv2.HorizontalPodAutoscaler) float64 {
	if v := firstValue(h); v != nil {
		return v.AsApproximateFloat64()
	}
	return 0
}

// firstValue is the first current metric value of the HPA (an average
// value, else a value), or nil.
func firstValue(h *autoscalingv2.HorizontalPodAutoscaler) *resource.Quantity {
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
			return v.AverageValue
		case v.Value != nil:
			return v.Value
		}
	}
	return nil
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
// "hpa sees" is what kube-controller-manager's HPA of web reads per pod,
// "eas sees" what ebbflow's Autoscaler of web-ebbflow reads.
const tableHeader = "   time │ web req/s  per-pod  hpa sees  eas sees │ pods/desired: web  web-ebbflow │ api req/s  pods desired │ orders/s  queue  workers desired │ conditions (web web-ebbflow api worker)"

// printRow writes one table row.
func printRow(w io.Writer, s sample) {
	web, eas, api, wk := s.W["web"], s.W[webEbbflow], s.W["api"], s.W["worker"]
	pair := func(ws workloadState) string { return fmt.Sprintf("%d/%d", ws.Ready, ws.Desired) }
	fmt.Fprintf(w, "%7s │ %9.1f  %7.1f  %8s  %8s │ %17s  %11s │ %9.1f  %4d %7d │ %8.1f  %5.0f  %7d %7d │ %s %s %s %s\n",
		fmtDur(s.T), s.Load["web"], s.PerPod["web"], web.Metric, eas.Metric, pair(web), pair(eas),
		s.Load["api"], api.Ready, api.Desired,
		s.Produce, s.Queue, wk.Ready, wk.Desired,
		web.Cond, eas.Cond, api.Cond, wk.Cond)
}

func fmtDur(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
