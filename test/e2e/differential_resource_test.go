package e2e

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// diffCPURequest is the cpu request of the differential Deployments' container.
const diffCPURequest = "100m"

// diffPodMemory is the memory working set published for every pod with cpu series
// (a pod without a memory sample has no PodMetrics).
const diffPodMemory = 32 << 20

// cpuUtilizationScenario is a Resource metric: average cpu Utilization 50% of the
// 100m request, exercising the upstream rules for unready pods. Within the 5m cpu
// initialization period a pod is unready while its sample is older than its
// readiness transition plus the metric window (1m): so for the first minute even the
// first pod is unready and 140m (140%) changes nothing; once it is trusted: 3 (@~61s).
// The two new pods are unready in turn (counted at 0 on scale-up: ratio 2.8/3 keeps 3);
// at 110s 20m per pod (20%) scales down on the ready pod alone (unready ones are left
// out on scale-down): 1. Observed on both sides: 1, 3@61s, 1@111s.
func cpuUtilizationScenario() diffScenario {
	s := time.Second
	return diffScenario{
		name: "cpu-utilization",
		spec: func(string) autoscalingv2.HorizontalPodAutoscalerSpec {
			return hpaSpec(1, 10, nil, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name:   "cpu",
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
			}})
		},
		steps: []diffStep{{15 * s, vals(keyCPU, 30)}, {95 * s, vals(keyCPU, 140)}, {40 * s, vals(keyCPU, 20)}},
	}
}

func (p *diffPublisher) cpuLabels(pod string) map[string]string {
	return map[string]string{"namespace": p.ns, "pod": pod, "container": "app"}
}

// applyCPU publishes every live pod's cpu (cpuCoresGauge, cores) and memory, or
// removes the series when the step has no cpu value or the pod is gone. Called
// with p.mu held.
func (p *diffPublisher) applyCPU(ctx context.Context, st diffStep) {
	milli, ok := st.values[keyCPU]
	if !ok {
		p.clearCPU()
		return
	}
	pods, err := p.env.c.Client().CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: "diff=true"})
	if err != nil {
		return // keep the series as they are until the next tick
	}
	live := map[string]bool{}
	e := p.env.e
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil {
			continue
		}
		e.SetGauge(cpuCoresGauge, p.cpuLabels(pod.Name), milli/1000)
		e.SetGauge(containerMemGauge, p.cpuLabels(pod.Name), diffPodMemory)
		live[pod.Name] = true
	}
	for pod := range p.cpu {
		if !live[pod] {
			e.Delete(cpuCoresGauge, p.cpuLabels(pod))
			e.Delete(containerMemGauge, p.cpuLabels(pod))
		}
	}
	p.cpu = live
}

// clearCPU removes every cpu and memory series of the namespace.
func (p *diffPublisher) clearCPU() {
	for pod := range p.cpu {
		p.env.e.Delete(cpuCoresGauge, p.cpuLabels(pod))
		p.env.e.Delete(containerMemGauge, p.cpuLabels(pod))
	}
	p.cpu = map[string]bool{}
}
