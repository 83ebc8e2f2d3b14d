package provider

import (
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/metrics/pkg/apis/metrics"
)

// assemblePods builds the PodMetrics of the pods that have both cpu and memory
// samples, in the order of pods. A container with one resource only reports 0 for the
// other; the timestamp is the oldest sample's; now is the creation timestamp.
func assemblePods(pods []*metav1.PartialObjectMetadata, cpu, mem containerSamples, window time.Duration, now metav1.Time) []metrics.PodMetrics {
	out := make([]metrics.PodMetrics, 0, len(pods))
	for _, pod := range pods {
		key := podKey{namespace: pod.Namespace, name: pod.Name}
		c, okCPU := cpu[key]
		m, okMem := mem[key]
		if !okCPU || !okMem {
			continue
		}
		names := make([]string, 0, len(c)+len(m))
		for n := range c {
			names = append(names, n)
		}
		for n := range m {
			if _, both := c[n]; !both {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		var oldest time.Time
		containers := make([]metrics.ContainerMetrics, 0, len(names))
		for _, n := range names {
			cs, cm := c[n], m[n]
			oldest = older(older(oldest, cs), cm)
			containers = append(containers, metrics.ContainerMetrics{
				Name:  n,
				Usage: corev1.ResourceList{corev1.ResourceCPU: cs.quantity(), corev1.ResourceMemory: bytesQuantity(cm.value)},
			})
		}
		out = append(out, metrics.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels, CreationTimestamp: now},
			Timestamp:  metav1.NewTime(oldest),
			Window:     metav1.Duration{Duration: window},
			Containers: containers,
		})
	}
	return out
}

// assembleNodes builds the NodeMetrics of the nodes that have both cpu and memory
// samples, in the order of nodes.
func assembleNodes(nodes []*corev1.Node, cpu, mem map[string]sampleValue, window time.Duration, now metav1.Time) []metrics.NodeMetrics {
	out := make([]metrics.NodeMetrics, 0, len(nodes))
	for _, node := range nodes {
		c, okCPU := cpu[node.Name]
		m, okMem := mem[node.Name]
		if !okCPU || !okMem {
			continue
		}
		out = append(out, metrics.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels, CreationTimestamp: now},
			Timestamp:  metav1.NewTime(older(older(time.Time{}, c), m)),
			Window:     metav1.Duration{Duration: window},
			Usage:      corev1.ResourceList{corev1.ResourceCPU: c.quantity(), corev1.ResourceMemory: bytesQuantity(m.value)},
		})
	}
	return out
}

// older returns the older of t and s's timestamp; a zero t or s (no sample) is ignored.
func older(t time.Time, s sampleValue) time.Time {
	st := s.timestamp.Time
	if st.IsZero() || (!t.IsZero() && !st.Before(t)) {
		return t
	}
	return st
}

// bytesQuantity returns v rounded to whole bytes (BinarySI); values beyond int64 keep
// 15 significant digits.
func bytesQuantity(v float64) resource.Quantity {
	if math.Abs(v) < math.MaxInt64/2 {
		return *resource.NewQuantity(int64(math.Round(v)), resource.BinarySI)
	}
	return sampleValue{value: v}.quantity()
}

// ResourceMilliValue is what metrics.k8s.io serves of one container sample of
// resource (cpu in cores, memory in bytes) in the milli-units the autoscaler
// reads (Quantity.MilliValue): NaN as 0, negative as 0, cpu rounded to the
// millicore, memory to the byte. false: the sample is not served (an
// infinity).
func ResourceMilliValue(name corev1.ResourceName, v model.SampleValue) (int64, bool) {
	if !usable(v, false) {
		return 0, false
	}
	s := toResourceSample(&model.Sample{Value: v})
	q := s.quantity()
	if name == corev1.ResourceMemory {
		q = bytesQuantity(s.value)
	}
	return q.MilliValue(), true
}
