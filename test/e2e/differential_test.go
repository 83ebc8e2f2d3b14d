package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
)

// The differential test runs kube-controller-manager's HPA controller and
// ebbflow-autoscaler side by side on the same metric trajectories and
// requires the same sequences of desired replicas.
//
// Each scenario gets a namespace with two identical Deployments, "kcm" (a
// plain HorizontalPodAutoscaler, reconciled by kube-controller-manager) and
// "eas" (an ebbflow Autoscaler with the identical spec), both fed the same
// series: the same queue_messages_ready{queue} for External metrics, the same
// e2e_inflight{service} for the Object metric, and for Pods metrics the same
// per-pod value published for every pod of either Deployment. The trajectory
// is a list of steps, each holding a set of series values for a while; a
// series absent from a step is removed from the exporter (a missing metric).
//
// Recorded are the Deployments' spec.replicas (the scale writes), polled
// every diffPoll, as a deduplicated sequence of distinct values with the time
// of each change relative to the start of the trajectory. The verdict:
//   - the value sequences are identical, and
//   - each change of one side happened within diffSkew of its counterpart.
//
// diffSkew is two sync periods plus 2s. One sync period is the phase
// difference of the two controllers' evaluation clocks (both evaluate every
// 5s, from different starting instants). The second one covers the
// upstream missing-pods rule on Pods metrics: a freshly scaled pod has no
// sample until the per-pod series publisher has seen it and Prometheus has
// scraped it (≤ ~1.5s), and an evaluation that falls in that window holds the
// count for one more period; which side hits that window is a matter of
// phase. 2s cover the scrape interval (1s) and this test's polling. The
// values themselves admit no tolerance.
//
// The drop-in run (dropin_test.go) replays some trajectories on a second
// cluster whose kube-controller-manager has no HPA controller, with
// ebbflow-autoscaler --hpa-mode=all reconciling the plain HPA, and compares
// its sequence with the kcm sequence recorded here.
//
// Behaviors: every spec has an explicit behavior. Scale-down stabilization
// is off (the upstream default of 5 minutes would outlast the test) unless a
// scenario sets a window, and the scale-up policies are wide (10 pods or
// 1000% per 12s) unless a scenario tests policies: with upstream's default
// 15s policy period, exactly three 5s sync periods, whether the first event
// is still in the window is decided by milliseconds of jitter and the two
// controllers would legitimately differ. Scenario periods and windows are
// 12s, two seconds away from any multiple of the sync period.
//
// Unready pods: the upstream rules for unready pods apply to cpu only
// (Resource metrics from metrics.k8s.io, which the adapter serves here from
// resourceRules over cAdvisor-shaped series). kwok makes pods Ready within a
// second, but within the cpu initialization period a pod also counts as
// unready while its sample is older than its readiness transition plus the
// metric window (1m here), so the cpu scenario (differential_resource_test.go)
// plays every freshly scaled pod through that rule.

const (
	diffSyncPeriod = 5 * time.Second // cluster.Options.HPASyncPeriod default
	diffPoll       = 250 * time.Millisecond
	diffSkew       = 2*diffSyncPeriod + 2*time.Second
	// diffPodsService is the service label of per-pod series.
	diffPodsService = "diff-pods"
	// diffObjectService is the Service the Object metric describes.
	diffObjectService = "diff-front"
)

// Keys of diffStep values.
const (
	keyPods   = "pods"   // per-pod e2e_inflight of every pod of the Deployments
	keyLoad   = "load"   // e2e_inflight summed over each Deployment's ready pods (conserved load), see replay_test.go
	keyObject = "object" // e2e_inflight summed over Service diffObjectService
	keyCPU    = "cpu"    // per-pod cpu usage in millicores (container "app"), see differential_resource_test.go
	// any other key is a queue suffix: queue_messages_ready{queue=<ns>-<key>}
)

// diffStep holds series values for d. A key absent from values is a series
// absent from the exporter.
type diffStep struct {
	d      time.Duration
	values map[string]float64
}

// diffScenario is a trajectory and the autoscaling spec both sides get.
type diffScenario struct {
	name  string
	steps []diffStep
	// spec returns the spec for namespace ns; the scale target's name is
	// filled in per side.
	spec func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec
}

func (s diffScenario) duration() time.Duration {
	var d time.Duration
	for _, st := range s.steps {
		d += st.d
	}
	return d
}

// stepAt returns the step active at elapsed time el (the last one after the
// end).
func (s diffScenario) stepAt(el time.Duration) diffStep {
	for _, st := range s.steps {
		if el < st.d {
			return st
		}
		el -= st.d
	}
	return s.steps[len(s.steps)-1]
}

func vals(kv ...any) map[string]float64 {
	m := map[string]float64{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = float64(kv[i+1].(int))
	}
	return m
}

func queueName(ns, key string) string { return ns + "-" + key }

func extMetric(ns, key string, target autoscalingv2.MetricTarget) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: QueueGauge,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": queueName(ns, key)}}},
		Target: target,
	}}
}

func valueTarget(v int64) autoscalingv2.MetricTarget {
	return autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: resource.NewQuantity(v, resource.DecimalSI)}
}

func avgTarget(v int64) autoscalingv2.MetricTarget {
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(v, resource.DecimalSI)}
}

// wideBehavior: no scale-down stabilization, scale-up and scale-down limits
// that never bind between 0 and 10 replicas (see the package comment above).
func wideBehavior() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0),
			SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 10, PeriodSeconds: 12},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 1000, PeriodSeconds: 12},
			},
		},
		ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 12},
			},
		},
	}
}

func hpaSpec(minR, maxR int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior, metrics ...autoscalingv2.MetricSpec) autoscalingv2.HorizontalPodAutoscalerSpec {
	if b == nil {
		b = wideBehavior()
	}
	return autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment"},
		MinReplicas:    ptr.To(minR), MaxReplicas: maxR, Metrics: metrics, Behavior: b,
	}
}

// diffScenarios are the trajectories. Expected sequences in the comments are
// what the upstream rules give; the test does not assert them, only that
// both controllers agree.
func diffScenarios() []diffScenario {
	s := 1 * time.Second
	return []diffScenario{
		{
			// External AverageValue 10 per replica: ceil(q/10). 1,3,5,7,1.
			name: "ramp",
			spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpaSpec(1, 10, nil, extMetric(ns, "q", avgTarget(10)))
			},
			steps: []diffStep{{20 * s, vals("q", 5)}, {20 * s, vals("q", 25)}, {20 * s, vals("q", 45)}, {20 * s, vals("q", 65)}, {25 * s, vals("q", 0)}},
		},
		{
			// A 12s spike, shorter than three sync periods: 1,8,1.
			name: "spike",
			spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpaSpec(1, 10, nil, extMetric(ns, "q", avgTarget(10)))
			},
			steps: []diffStep{{15 * s, vals("q", 5)}, {12 * s, vals("q", 80)}, {30 * s, vals("q", 5)}},
		},
		{
			// External Value 20 (ratio × ready pods): 60 is 3×: 1,3,9,10;
			// then 4 is 0.2×: 10,2,1.
			name: "drop-value",
			spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpaSpec(1, 10, nil, extMetric(ns, "q", valueTarget(20)))
			},
			steps: []diffStep{{40 * s, vals("q", 60)}, {30 * s, vals("q", 4)}},
		},
		{
			// Pods AverageValue 10 with 25 per pod whatever the count: 1,3,8,10;
			// 2 per pod: 10,2,1.
			name: "pods",
			spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpaSpec(1, 10, nil, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: InflightGauge}, Target: avgTarget(10)}})
			},
			steps: []diffStep{{10 * s, vals(keyPods, 5)}, {40 * s, vals(keyPods, 25)}, {30 * s, vals(keyPods, 2)}},
		},
		podsLoadScenario(),
		{
			// Two External metrics, one disappears: while a fails and b
			// alone would scale down, hold (6); when b wants more, scale up
			// anyway (9); all back: 2. 1,6,9,2.
			name: "missing-metric",
			spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpaSpec(1, 10, nil, extMetric(ns, "a", avgTarget(10)), extMetric(ns, "b", avgTarget(10)))
			},
			steps: []diffStep{{20 * s, vals("a", 60, "b", 10)}, {20 * s, vals("b", 10)}, {20 * s, vals("b", 90)}, {25 * s, vals("a", 20, "b", 10)}},
		},
		{
			// Policies and windows: up by at most 2 pods per 12s; down after a
			// 12s stabilization window by the larger of 50% and 1 pod per 12s
			// (periods count from the scale events): 1,3,5,7,9,10,5,2,1.
			name: "behavior",
			spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpaSpec(1, 10, &autoscalingv2.HorizontalPodAutoscalerBehavior{
					ScaleUp: &autoscalingv2.HPAScalingRules{
						StabilizationWindowSeconds: ptr.To[int32](0),
						Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 12}},
					},
					ScaleDown: &autoscalingv2.HPAScalingRules{
						StabilizationWindowSeconds: ptr.To[int32](12),
						SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
						Policies: []autoscalingv2.HPAScalingPolicy{
							{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 12},
							{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 12},
						},
					},
				}, extMetric(ns, "q", avgTarget(10)))
			},
			steps: []diffStep{{85 * s, vals("q", 100)}, {65 * s, vals("q", 0)}},
		},
		{
			// External AverageValue q (10/replica) and Object Value (Service
			// total 20): the larger proposal wins. 1,4 (q), 8 (object 40 is
			// 2× at 4 ready), 10 (2× at 8, capped), then q alone: 3.
			name: "several-metrics-object",
			spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpaSpec(1, 10, nil, extMetric(ns, "q", avgTarget(10)),
					autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
						DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: diffObjectService},
						Metric:          autoscalingv2.MetricIdentifier{Name: InflightGauge},
						Target:          valueTarget(20),
					}})
			},
			steps: []diffStep{
				{20 * s, vals("q", 40, keyObject, 10)},
				{20 * s, vals("q", 40, keyObject, 40)},
				{25 * s, vals("q", 30, keyObject, 4)},
			},
		},
		{
			// Object AverageValue: ceil(value/target). 1,5,2.
			name: "object-average",
			spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpaSpec(1, 10, nil, autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
					DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: diffObjectService},
					Metric:          autoscalingv2.MetricIdentifier{Name: InflightGauge},
					Target:          avgTarget(8),
				}})
			},
			steps: []diffStep{{15 * s, vals(keyObject, 4)}, {20 * s, vals(keyObject, 40)}, {25 * s, vals(keyObject, 12)}},
		},
		cpuUtilizationScenario(),
		{
			// minReplicas 0 with an External metric: 1,3,0,5,0.
			name: "scale-to-zero",
			spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
				return hpaSpec(0, 10, nil, extMetric(ns, "q", avgTarget(10)))
			},
			steps: []diffStep{{20 * s, vals("q", 30)}, {20 * s, vals("q", 0)}, {20 * s, vals("q", 50)}, {20 * s, vals("q", 0)}},
		},
	}
}

// replicaChange is one distinct value of spec.replicas, at time at after the
// start of the trajectory.
type replicaChange struct {
	replicas int32
	at       time.Duration
}

type replicaSeq []replicaChange

func (s replicaSeq) values() []int32 {
	out := make([]int32, len(s))
	for i, c := range s {
		out[i] = c.replicas
	}
	return out
}

func (s replicaSeq) String() string {
	parts := make([]string, len(s))
	for i, c := range s {
		if i == 0 {
			parts[i] = fmt.Sprint(c.replicas)
			continue
		}
		parts[i] = fmt.Sprintf("%d@%.0fs", c.replicas, c.at.Seconds())
	}
	return strings.Join(parts, " ")
}

// compareSeqs returns "" if the sequences have the same values and each
// change is within skew of its counterpart, else what differs. A transient —
// an intermediate count, between its neighbours, held for at most one sync
// period — is forgiven on either side: it comes from a sync that read one
// metric before and another after a simultaneous change of both (a sampling
// accident of the moment, not a different rule), and the other controller,
// syncing a moment later, skipped it.
func compareSeqs(a, b replicaSeq, skew time.Duration) string {
	if !slices.Equal(a.values(), b.values()) {
		a, b = withoutTransients(a), withoutTransients(b)
	}
	if !slices.Equal(a.values(), b.values()) {
		return fmt.Sprintf("values differ: %v vs %v", a.values(), b.values())
	}
	var late []string
	for i := 1; i < len(a); i++ {
		if d := (a[i].at - b[i].at).Abs(); d > skew {
			late = append(late, fmt.Sprintf("change %d (→%d) %v apart", i, a[i].replicas, d.Round(100*time.Millisecond)))
		}
	}
	if len(late) > 0 {
		return "timing beyond " + skew.String() + ": " + strings.Join(late, ", ")
	}
	return ""
}

// withoutTransients drops each change that lies strictly between its
// neighbours and was replaced within one sync period (plus a second).
func withoutTransients(s replicaSeq) replicaSeq {
	out := replicaSeq{}
	for i, c := range s {
		if i > 0 && i < len(s)-1 {
			prev, next := s[i-1].replicas, s[i+1].replicas
			between := (prev < c.replicas && c.replicas < next) || (prev > c.replicas && c.replicas > next)
			if between && s[i+1].at-c.at <= diffSyncPeriod+time.Second {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// diffEnv is a cluster with the exporter Prometheus scrapes for it.
type diffEnv struct {
	c *cluster.Cluster
	e *exporter.Exporter
}

// diffSide is one controller under comparison: the name of its Deployment
// and autoscaling object, and how to create that object (an HPA or an
// ebbflow Autoscaler) with a spec.
type diffSide struct {
	name   string
	create func(ctx context.Context, ns string, spec autoscalingv2.HorizontalPodAutoscalerSpec) error
}

func hpaSide(c *cluster.Cluster, name string) diffSide {
	return diffSide{name: name, create: func(ctx context.Context, ns string, spec autoscalingv2.HorizontalPodAutoscalerSpec) error {
		_, err := c.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		return err
	}}
}

func autoscalerSide(t *testing.T, c *cluster.Cluster, name string) diffSide {
	client, err := ebbclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatalf("ebbflow clientset: %v", err)
	}
	return diffSide{name: name, create: func(ctx context.Context, ns string, spec autoscalingv2.HorizontalPodAutoscalerSpec) error {
		_, err := client.AutoscalingV1alpha1().Autoscalers(ns).Create(ctx, &v1alpha1.Autoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1test.FromHPASpec(&spec)}, metav1.CreateOptions{})
		return err
	}}
}

// diffRun is one run of a scenario: each Deployment's sequence, the
// namespace and when the trajectory started.
type diffRun struct {
	seqs  map[string]replicaSeq
	ns    string
	start time.Time
}

// runDiffScenario runs one scenario in a fresh namespace of env: it creates
// one Deployment per side and the Service the Object metric describes,
// publishes the first step, creates each side's autoscaling object, plays
// the trajectory and returns each Deployment's sequence. Safe to call from
// goroutines of the test (it never calls t.Fatal); cleanups delete the
// namespace and the series.
func runDiffScenario(t *testing.T, env diffEnv, sc diffScenario, sides ...diffSide) (diffRun, error) {
	ctx := context.Background()
	client := env.c.Client()
	nsObj, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "diff-" + sc.name + "-"}}, metav1.CreateOptions{})
	if err != nil {
		return diffRun{}, fmt.Errorf("create namespace: %w", err)
	}
	ns := nsObj.Name
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	// The Object metric's Service (its selector matters to nobody).
	if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: diffObjectService},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": diffObjectService}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{}); err != nil {
		return diffRun{}, fmt.Errorf("create service: %w", err)
	}
	for _, sd := range sides {
		if _, err := client.AppsV1().Deployments(ns).Create(ctx, diffDeployment(sd.name), metav1.CreateOptions{}); err != nil {
			return diffRun{}, fmt.Errorf("create deployment %s/%s: %w", ns, sd.name, err)
		}
	}
	pub := newDiffPublisher(env, ns)
	t.Cleanup(pub.clear)
	// The trajectory starts with its first values published; the
	// autoscaling objects are created right after and act at once, often
	// before the first poll, so every sequence starts from the
	// Deployments' initial replica count at time 0.
	pub.apply(ctx, sc.steps[0])
	start := time.Now()
	seqs := map[string]replicaSeq{}
	for _, sd := range sides {
		seqs[sd.name] = replicaSeq{{replicas: 1}}
	}
	for _, sd := range sides {
		spec := sc.spec(ns)
		spec.ScaleTargetRef.Name = sd.name
		if err := sd.create(ctx, ns, spec); err != nil {
			return diffRun{}, fmt.Errorf("create %s autoscaling object: %w", sd.name, err)
		}
	}
	end := start.Add(sc.duration())
	for i := 0; ; i++ {
		now := time.Now()
		if now.After(end) {
			break
		}
		pub.apply(ctx, sc.stepAt(now.Sub(start)))
		list, err := client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("list deployments: %v", err)
		} else {
			for _, d := range list.Items {
				r := ptr.Deref(d.Spec.Replicas, 1)
				s := seqs[d.Name]
				if len(s) == 0 || s[len(s)-1].replicas != r {
					seqs[d.Name] = append(s, replicaChange{replicas: r, at: time.Since(start)})
				}
			}
		}
		time.Sleep(diffPoll)
	}
	return diffRun{seqs: seqs, ns: ns, start: start}, nil
}

// diffDeployment is a one-replica Deployment of pods labelled app=<name> and
// diff=true, pinned to a kwok node.
func diffDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name, "diff": "true"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeName:    cluster.NodeName(0),
					Tolerations: []corev1.Toleration{{Key: cluster.KwokNodeAnnotation, Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
						// For the Resource (cpu Utilization) scenarios; unused by the others.
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(diffCPURequest)}}}},
				},
			},
		},
	}
}

// diffPublisher keeps the exporter's series of one namespace at a step's
// values.
type diffPublisher struct {
	env  diffEnv
	ns   string
	mu   sync.Mutex
	pods map[string]bool // pods with a per-pod series
	cpu  map[string]bool // pods with cpu and memory series
	keys map[string]bool // queue keys and keyObject published
}

func newDiffPublisher(env diffEnv, ns string) *diffPublisher {
	return &diffPublisher{env: env, ns: ns, pods: map[string]bool{}, cpu: map[string]bool{}, keys: map[string]bool{}}
}

func (p *diffPublisher) podLabels(pod string) map[string]string {
	return map[string]string{"namespace": p.ns, "pod": pod, "service": diffPodsService}
}

func (p *diffPublisher) objectLabels() map[string]string {
	return map[string]string{"namespace": p.ns, "pod": "diff-object-source", "service": diffObjectService}
}

// apply publishes st's values and removes the series st does not have.
func (p *diffPublisher) apply(ctx context.Context, st diffStep) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.env.e
	for k := range p.keys {
		if _, ok := st.values[k]; !ok {
			p.deleteKey(k)
		}
	}
	for k, v := range st.values {
		switch k {
		case keyPods, keyLoad, keyCPU:
			continue
		case keyObject:
			e.SetGauge(InflightGauge, p.objectLabels(), v)
		default:
			e.SetGauge(QueueGauge, map[string]string{"queue": queueName(p.ns, k)}, v)
		}
		p.keys[k] = true
	}
	values, ok := p.perPodValues(ctx, st)
	if !ok {
		return // keep the series as they are until the next tick
	}
	live := map[string]bool{}
	for pod, v := range values {
		live[pod] = true
		e.SetGauge(InflightGauge, p.podLabels(pod), v)
	}
	for pod := range p.pods {
		if !live[pod] {
			e.Delete(InflightGauge, p.podLabels(pod))
		}
	}
	p.pods = live
	p.applyCPU(ctx, st)
}

func (p *diffPublisher) deleteKey(k string) {
	switch k {
	case keyObject:
		p.env.e.Delete(InflightGauge, p.objectLabels())
	default:
		p.env.e.Delete(QueueGauge, map[string]string{"queue": queueName(p.ns, k)})
	}
	delete(p.keys, k)
}

// clear removes every series of the namespace.
func (p *diffPublisher) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.keys {
		p.deleteKey(k)
	}
	for pod := range p.pods {
		p.env.e.Delete(InflightGauge, p.podLabels(pod))
	}
	p.pods = map[string]bool{}
	p.clearCPU()
}

// diffResult is one row of the report.
type diffResult struct {
	scenario, mode string
	a, b           replicaSeq
	verdict        string
}

// diffReport collects the rows of the report from concurrent runs.
type diffReport struct {
	mu   sync.Mutex
	rows []diffResult
}

func (r *diffReport) add(row diffResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, row)
}

func (r *diffReport) table() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	rows := slices.Clone(r.rows)
	slices.SortFunc(rows, func(a, b diffResult) int {
		return strings.Compare(a.mode+" "+a.scenario, b.mode+" "+b.scenario)
	})
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "MODE\tSCENARIO\tKCM SEQUENCE\tEBBFLOW SEQUENCE\tVERDICT")
	for _, row := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", row.mode, row.scenario, row.a, row.b, row.verdict)
	}
	_ = w.Flush()
	return b.String()
}

// TestDifferential compares kube-controller-manager's HPA controller with
// ebbflow-autoscaler on every scenario (Autoscaler objects next to HPAs in the
// shared cluster) and, on a second cluster without kube-controller-manager's
// HPA controller, ebbflow-autoscaler in drop-in mode on plain HPAs for some
// scenarios (dropin_test.go). See the comment at the top of this file.
//
// The scenarios run concurrently in goroutines of this test, not as
// parallel subtests: go test runs only -parallel (GOMAXPROCS, 2 here)
// parallel subtests at once, and the drop-in runs start while the others
// play.
func TestDifferential(t *testing.T) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := env().StartAutoscaler(ctx, cluster.AutoscalerOptions{HPAMode: "off", Args: []string{"--v=2"}}); err != nil {
		t.Fatalf("start ebbflow-autoscaler: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ebbflow-autoscaler log tail:\n%s", env().LogTail(cluster.Autoscaler, 60))
		}
	})
	scenarios := diffScenarios()
	report := &diffReport{}
	t.Cleanup(func() {
		t.Logf("differential results after %v (sequence: initial replicas, then replicas@seconds after the trajectory started; timing tolerance %v):\n%s",
			time.Since(start).Round(time.Second), diffSkew, report.table())
	})

	// Drop-in cluster start-up overlaps the scenarios of the shared cluster.
	type dropInRun struct {
		seqs map[string]replicaSeq
		err  error
		c    *cluster.Cluster // only under dropInClusterKey
	}
	dropIn := make(chan map[string]dropInRun, 1)
	go func() {
		runs := map[string]dropInRun{}
		defer func() { dropIn <- runs }()
		denv, err := startDropIn(t, ctx)
		if err != nil {
			runs[""] = dropInRun{err: err}
			return
		}
		runs[dropInClusterKey] = dropInRun{c: denv.c}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, sc := range scenarios {
			if slices.Contains(dropInScenarios, sc.name) {
				wg.Go(func() {
					run, err := runDiffScenario(t, denv, sc, hpaSide(denv.c, "hpa"))
					mu.Lock()
					runs[sc.name] = dropInRun{seqs: run.seqs, err: err}
					mu.Unlock()
				})
			}
		}
		wg.Wait()
	}()

	shared := diffEnv{c: env(), e: exp()}
	kcmSeqs := map[string]replicaSeq{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, sc := range scenarios {
		side := autoscalerSide(t, env(), "eas")
		wg.Go(func() {
			run, err := runDiffScenario(t, shared, sc, hpaSide(env(), "kcm"), side)
			if err != nil {
				t.Errorf("%s: %v", sc.name, err)
				report.add(diffResult{scenario: sc.name, mode: "autoscaler", verdict: "ERROR: " + err.Error()})
				return
			}
			kcm, eas := run.seqs["kcm"], run.seqs["eas"]
			mu.Lock()
			kcmSeqs[sc.name] = kcm
			mu.Unlock()
			report.add(diffResult{scenario: sc.name, mode: "autoscaler", a: kcm, b: eas, verdict: verdict(t, sc.name, "ebbflow Autoscaler", kcm, eas)})
			if slices.Contains(replayScenarios, sc.name) {
				sim, err := replayScenario(t, sc, run, "kcm")
				v := "ERROR: " + fmt.Sprint(err)
				if err == nil {
					v = verdict(t, sc.name, "ebbflow simulate", kcm, sim)
				} else {
					t.Errorf("%s: ebbflow simulate: %v", sc.name, err)
				}
				report.add(diffResult{scenario: sc.name, mode: "simulate", a: kcm, b: sim, verdict: v})
			}
		})
	}
	wg.Wait()

	checkNoForbidden(t, "ebbflow-autoscaler", env())

	runs := <-dropIn
	if r, ok := runs[""]; ok {
		t.Errorf("drop-in cluster: %v", r.err)
		return
	}
	if r, ok := runs[dropInClusterKey]; ok {
		checkNoForbidden(t, "drop-in ebbflow-autoscaler", r.c)
	}
	for _, name := range dropInScenarios {
		r, ok := runs[name]
		switch {
		case !ok:
			t.Errorf("drop-in %s: no run", name)
		case r.err != nil:
			t.Errorf("drop-in %s: %v", name, r.err)
			report.add(diffResult{scenario: name, mode: "drop-in", verdict: "ERROR: " + r.err.Error()})
		default:
			kcm, got := kcmSeqs[name], r.seqs["hpa"]
			if kcm == nil {
				t.Errorf("drop-in %s: no kube-controller-manager sequence to compare with", name)
				continue
			}
			report.add(diffResult{scenario: name, mode: "drop-in", a: kcm, b: got, verdict: verdict(t, name, "ebbflow drop-in HPA", kcm, got)})
		}
	}
}

// dropInClusterKey is the key of the drop-in cluster among the drop-in runs.
const dropInClusterKey = "\x00cluster"

// checkNoForbidden fails the test if the autoscaler's log shows a request
// RBAC refused: it runs as a user bound only to the ClusterRoles (and Role)
// of manifests/autoscaler, so this checks that they grant what it uses.
func checkNoForbidden(t *testing.T, what string, c *cluster.Cluster) {
	t.Helper()
	// The package documents each component's log as <Dir>/<component>.log.
	data, err := os.ReadFile(filepath.Join(c.Dir(), cluster.Autoscaler+".log"))
	if err != nil {
		t.Errorf("%s log: %v", what, err)
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "forbidden") {
			t.Errorf("%s was refused a request (manifests/autoscaler RBAC too narrow?): %s", what, line)
			return
		}
	}
}

// verdict compares the sequences, reports a mismatch as a test error and
// returns the verdict for the table.
func verdict(t *testing.T, scenario, what string, kcm, got replicaSeq) string {
	if d := compareSeqs(kcm, got, diffSkew); d != "" {
		t.Errorf("%s: kcm %v, %s %v: %s", scenario, kcm, what, got, d)
		return "DIFFER: " + d
	}
	if len(kcm) < 2 {
		t.Errorf("%s: no scaling at all (kcm %v, %s %v): the scenario tests nothing", scenario, kcm, what, got)
		return "NO CHANGE"
	}
	return "MATCH"
}

// TestDifferentialCompare checks the verdict rule itself: equal values within
// the skew match; other values, a missing change or a late change do not.
func TestDifferentialCompare(t *testing.T) {
	s := time.Second
	seq := func(rs ...any) replicaSeq {
		out := replicaSeq{}
		for i := 0; i < len(rs); i += 2 {
			out = append(out, replicaChange{replicas: int32(rs[i].(int)), at: rs[i+1].(time.Duration)})
		}
		return out
	}
	kcm := seq(1, 0*s, 3, 3*s, 0, 23*s)
	for _, tc := range []struct {
		name  string
		other replicaSeq
		match bool
	}{
		{"same", seq(1, 0*s, 3, 3*s, 0, 23*s), true},
		{"one sync later", seq(1, 0*s, 3, 8*s, 0, 28*s), true},
		{"at the tolerance", seq(1, 0*s, 3, 3*s+diffSkew, 0, 23*s), true},
		{"other value", seq(1, 0*s, 4, 3*s, 0, 23*s), false},
		{"missing change", seq(1, 0*s, 3, 3*s), false},
		{"extra change", seq(1, 0*s, 3, 3*s, 1, 10*s, 0, 23*s), false},
		{"transient within a sync", seq(1, 0*s, 3, 3*s, 1, 18*s, 0, 23*s), true},
		{"transient held longer", seq(1, 0*s, 3, 3*s, 1, 16*s, 0, 23*s), false},
		{"not between its neighbours", seq(1, 0*s, 3, 3*s, 4, 18*s, 0, 23*s), false},
		{"late", seq(1, 0*s, 3, 3*s+diffSkew+s, 0, 23*s), false},
	} {
		if got := compareSeqs(kcm, tc.other, diffSkew) == ""; got != tc.match {
			t.Errorf("%s: compareSeqs(%v, %v) match = %v, want %v", tc.name, kcm, tc.other, got, tc.match)
		}
	}
}
