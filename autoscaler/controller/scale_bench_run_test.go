//go:build unix

package controller

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/scale"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	ebbmetrics "github.com/ebbflow/ebbflow/autoscaler/metrics"
	metricsfake "github.com/ebbflow/ebbflow/autoscaler/metrics/fake"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// lagRecorder is the controller's lag histogram that also keeps every
// observation with its time.
type lagRecorder struct {
	prometheus.Histogram
	mu  sync.Mutex
	obs []lagObservation
}

type lagObservation struct {
	at  time.Time
	lag time.Duration
}

func (r *lagRecorder) Observe(v float64) {
	now := time.Now()
	r.mu.Lock()
	r.obs = append(r.obs, lagObservation{now, time.Duration(v * float64(time.Second))})
	r.mu.Unlock()
	r.Histogram.Observe(v)
}

func (r *lagRecorder) observations() []lagObservation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.obs)
}

// benchScales is an in-memory scale client: /scale of Deployments by name.
type benchScales struct {
	mu sync.Mutex
	m  map[string]*autoscalingv1.Scale
}

var _ scale.ScalesGetter = (*benchScales)(nil)

func (s *benchScales) Scales(string) scale.ScaleInterface { return s }

func (s *benchScales) Get(_ context.Context, gr schema.GroupResource, name string, _ metav1.GetOptions) (*autoscalingv1.Scale, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.m[name]
	if !ok {
		return nil, apierrors.NewNotFound(gr, name)
	}
	return sc.DeepCopy(), nil
}

func (s *benchScales) Update(_ context.Context, gr schema.GroupResource, sc *autoscalingv1.Scale, _ metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[sc.Name]
	if !ok {
		return nil, apierrors.NewNotFound(gr, sc.Name)
	}
	cur.Spec.Replicas = sc.Spec.Replicas
	return cur.DeepCopy(), nil
}

func (s *benchScales) Patch(context.Context, schema.GroupVersionResource, string, types.PatchType, []byte, metav1.PatchOptions) (*autoscalingv1.Scale, error) {
	return nil, fmt.Errorf("patch is not supported")
}

func stripManagedFieldsForBench(obj any) (any, error) {
	if m, err := apimeta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

func benchMapper() apimeta.RESTMapper {
	mapper := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{appsv1.SchemeGroupVersion})
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), apimeta.RESTScopeNamespace)
	return mapper
}

// scaleFixture builds the objects of a case: a fake API holding the HPAs
// (with the status the controller would write, as after a restart) and the
// pods, the scales, and the metrics.
func scaleFixture(b *testing.B, c scaleCase) (*kubefake.Clientset, *benchScales, *metricsfake.Client, []string) {
	now := time.Now()
	started := metav1.NewTime(now.Add(-time.Hour))
	scales := &benchScales{m: make(map[string]*autoscalingv1.Scale, c.n)}
	fm := &metricsfake.Client{Timestamp: now, Pods: map[string]replicas.Samples{}, External: map[string][]int64{}}
	objs := make([]kruntime.Object, 0, c.n*(scalePodsPerTarget+1))
	hpas := make([]*autoscalingv2.HorizontalPodAutoscaler, 0, c.n)
	keys := make([]string, 0, c.n)
	for i := range c.n {
		name := fmt.Sprintf("w%05d", i)
		scales.m[name] = &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec:       autoscalingv1.ScaleSpec{Replicas: scalePodsPerTarget},
			Status:     autoscalingv1.ScaleStatus{Replicas: scalePodsPerTarget, Selector: "app=" + name},
		}
		samples := replicas.Samples{}
		for j := range scalePodsPerTarget {
			objs = append(objs, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: podName(name, j), Namespace: "ns", Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started, Conditions: []corev1.PodCondition{
					{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}}},
			})
			samples[podName(name, j)] = replicas.Sample{Value: 10_000, Timestamp: now, Window: time.Minute}
		}
		// Every metric is at its target: the steady state, no scale writes.
		var spec autoscalingv2.MetricSpec
		switch {
		case c.metric == "pods":
			fm.Pods["qps-"+name] = samples
			spec = podsMetric("qps-"+name, "10")
		case c.shared:
			fm.External["queue"] = []int64{30_000}
			spec = externalMetric("queue", "10")
		default:
			fm.External["queue-"+name] = []int64{30_000}
			spec = externalMetric("queue-"+name, "10")
		}
		specs := []autoscalingv2.MetricSpec{spec}
		for k := 1; k < c.metrics; k++ {
			m := fmt.Sprintf("queue-%s-%d", name, k)
			fm.External[m] = []int64{30_000}
			specs = append(specs, externalMetric(m, "10"))
		}
		hpa := newHPA(name, name, 1, 10, specs...)
		objs = append(objs, hpa)
		hpas = append(hpas, hpa)
		keys = append(keys, queueKey(hpaKindName, "ns", name))
	}
	kube := kubefake.NewClientset(objs...)

	// Warm the statuses with one evaluation each through a throw-away
	// controller over seeded indexers, so that the run starts as a restart
	// does: statuses current, no writes expected.
	factory := informers.NewSharedInformerFactory(kube, 0)
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, h := range hpas {
		if err := factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Add(h); err != nil {
			b.Fatal(err)
		}
	}
	warm, err := New(Config{SyncPeriod: scaleSyncPeriod, Tolerance: 0.1, Workers: 1}, Deps{
		Scales: scales, Mapper: benchMapper(), Metrics: fm,
		Pods:     factory.Core().V1().Pods().Informer(),
		Recorder: &record.FakeRecorder{}, Clock: clock.RealClock{},
	}, NewHPAKind(factory.Autoscaling().V2().HorizontalPodAutoscalers(), kube.AutoscalingV2()))
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range keys {
		if _, err := warm.sync(context.Background(), k); err != nil {
			b.Fatalf("warm-up sync of %s: %v", k, err)
		}
	}
	warm.queue.ShutDown()
	kube.ClearActions()
	return kube, scales, fm, keys
}

func runScale(b *testing.B, c scaleCase, duration, delay time.Duration) scaleResult {
	b.StopTimer()
	kube, scales, fm, _ := scaleFixture(b, c)
	fm.Delay = delay
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(stripManagedFieldsForBench))
	self, err := NewSelfMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	lags := &lagRecorder{Histogram: self.lag}
	self.lag = lags
	ctrl, err := New(Config{
		SyncPeriod: scaleSyncPeriod, Tolerance: 0.1,
		DownscaleStabilization:   5 * time.Minute,
		CPUInitializationPeriod:  5 * time.Minute,
		InitialReadinessDelay:    30 * time.Second,
		Workers:                  c.workers,
		MetricReadsPerEvaluation: c.perEval,
	}, Deps{
		Scales:      scales,
		Mapper:      benchMapper(),
		Metrics:     ebbmetrics.NewDeduplicated(fm, scaleSyncPeriod/3, clock.RealClock{}),
		Pods:        factory.Core().V1().Pods().Informer(),
		Recorder:    &record.FakeRecorder{},
		SelfMetrics: self,
	}, NewHPAKind(factory.Autoscaling().V2().HorizontalPodAutoscalers(), kube.AutoscalingV2()))
	if err != nil {
		b.Fatal(err)
	}
	readsBefore := fm.Calls()

	runtime.GC()
	res := scaleResult{n: c.n, duration: duration}
	res.fixtureHeap = readMetrics().heap

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	cpu0 := cpuTime()
	steadyFrom := t0.Add(scaleSyncPeriod)
	var cpuSteady time.Duration
	var statusWrites int
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(scaleSampleEvery)
		defer tick.Stop()
		steadyTaken := false
		lastClear := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				m := readMetrics()
				res.peakHeap = max(res.peakHeap, m.heap)
				res.maxGoroutines = max(res.maxGoroutines, m.goroutines)
				if !now.Before(steadyFrom) {
					if !steadyTaken {
						cpuSteady, steadyTaken = cpuTime(), true
					}
					res.steadyLive = max(res.steadyLive, m.live)
				}
				// The fake clientset records every action; count the
				// status writes and drop the record now and then so
				// that it does not grow the heap.
				if now.Sub(lastClear) >= time.Second {
					statusWrites += countStatusWrites(kube.Actions())
					kube.ClearActions()
					lastClear = now
				}
			}
		}
	}()
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	b.StartTimer()
	go func() { done <- ctrl.Run(ctx) }()

	timer := time.NewTimer(duration)
	select {
	case <-timer.C:
	case err := <-done:
		b.Fatalf("Run returned early: %v", err)
	}
	end := time.Now()
	cpuEnd := cpuTime()
	cancel()
	b.StopTimer()
	select {
	case err := <-done:
		if err != nil {
			b.Fatalf("Run = %v", err)
		}
	case <-time.After(3 * time.Minute):
		// An overloaded case drains its backlog (every queued key is
		// evaluated once more, failing fast on the cancelled context).
		b.Fatal("Run did not return within 3 minutes of the cancel")
	}
	<-samplerDone
	factory.Shutdown()

	res.totalCPU = cpuEnd - cpu0
	res.steadyWindow = end.Sub(steadyFrom)
	if cpuSteady > 0 {
		res.steadyCPU = cpuEnd - cpuSteady
	}
	obs := lags.observations()
	for i, o := range obs {
		if i < c.n {
			res.startup = append(res.startup, o.lag)
			if i == c.n-1 {
				res.startupSpan = o.at.Sub(obs[0].at)
			}
		} else {
			res.steady = append(res.steady, o.lag)
		}
		if !o.at.Before(steadyFrom) && !o.at.After(end) {
			res.steadyEvals++
		}
	}
	logRounds(b, obs, c.n, t0, end)
	res.reads = fm.Calls() - readsBefore
	res.statusWrites = statusWrites + countStatusWrites(kube.Actions())
	res.failed = testutil.ToFloat64(self.decisions.WithLabelValues("failed"))
	b.Logf("%s: %d evaluations (%d start-up), %d metric reads, %d status writes, %.0f failed; load average %s",
		c.name(), len(obs), len(res.startup), res.reads, res.statusWrites, res.failed, loadAverage())
	return res
}

// logRounds logs the lag of the periodic evaluations per sync period of
// the run (by the time of the evaluation), to show whether it drifts.
func logRounds(b *testing.B, obs []lagObservation, n int, t0, end time.Time) {
	if len(obs) <= n {
		return
	}
	var rounds [][]time.Duration
	for _, o := range obs[n:] {
		if o.at.After(end) {
			continue
		}
		i := int(o.at.Sub(t0) / scaleSyncPeriod)
		for len(rounds) <= i {
			rounds = append(rounds, nil)
		}
		rounds[i] = append(rounds[i], o.lag)
	}
	for i, r := range rounds {
		if len(r) == 0 {
			continue
		}
		b.Logf("  periodic evaluations in [%v, %v): %d, lag p50 %v p99 %v max %v", time.Duration(i)*scaleSyncPeriod, time.Duration(i+1)*scaleSyncPeriod,
			len(r), percentile(r, 0.5).Round(time.Microsecond), percentile(r, 0.99).Round(time.Microsecond), percentile(r, 1).Round(time.Microsecond))
	}
}

// countStatusWrites counts the writes of the HPAs: status updates and
// patches of the decision-record annotation.
func countStatusWrites(actions []core.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" || a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}
