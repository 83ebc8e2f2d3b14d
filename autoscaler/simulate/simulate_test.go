package simulate

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func milli(v int64) *resource.Quantity { return resource.NewMilliQuantity(v, resource.DecimalSI) }

func podsMetric(name string, target int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: milli(target)},
	}}
}

func externalMetric(name string, averageTarget int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: milli(averageTarget)},
	}}
}

func spec(minR, maxR int32, metrics ...autoscalingv2.MetricSpec) evaluation.Spec {
	return evaluation.Spec{HPA: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: maxR, Metrics: metrics}}
}

// fastUp lets one evaluation scale up to any count.
func fastUp(s evaluation.Spec) evaluation.Spec {
	s.HPA.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr[int32](0),
		Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10000, PeriodSeconds: 15}},
	}}
	return s
}

func config(steps int, initial int32) Config {
	return Config{
		Start: t0, Step: 15 * time.Second, Steps: steps, InitialReplicas: initial,
		Settings: evaluation.DefaultSettings(),
	}
}

// constant returns n steps of v (milli-units).
func constant(n int, v int64) Series {
	s := Series{Values: make([]int64, n)}
	for i := range s.Values {
		s.Values[i] = v
	}
	return s
}

func run(t *testing.T, cfg Config, s evaluation.Spec, series ...Series) Result {
	t.Helper()
	res, err := Run(cfg, s, series)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The load of a Pods metric is conserved: whatever the replica count, the
// per-pod value read times the ready pods is the recorded load, and the
// replay settles on ceil(load / target).
func TestPodsLoadConserved(t *testing.T) {
	for _, tc := range []struct {
		load, target int64 // milli
		initial      int32
	}{
		{load: 1_000_000, target: 100_000, initial: 2},
		{load: 730_000, target: 50_000, initial: 30},
		{load: 90_000, target: 100_000, initial: 4},
	} {
		cfg := config(80, tc.initial)
		cfg.PodStartup = 0
		res := run(t, cfg, fastUp(spec(1, 100, podsMetric("rps", tc.target))), constant(80, tc.load))
		for _, st := range res.Steps {
			if st.Values[0] == Missing {
				t.Fatalf("step %s read no value", st.Time)
			}
			if got := st.Values[0] * int64(st.Ready); math.Abs(float64(got-tc.load)) > float64(st.Ready) {
				t.Errorf("per-pod %d × ready %d = %d, want the load %d", st.Values[0], st.Ready, got, tc.load)
			}
		}
		want := int32(math.Ceil(float64(tc.load) / float64(tc.target)))
		if got := res.Steps[len(res.Steps)-1].Replicas; got != want {
			t.Errorf("load %d target %d: settled on %d replicas, want %d", tc.load, tc.target, got, want)
		}
	}
}

// New pods report nothing until PodStartup has passed: meanwhile the load
// is divided among the pods that were ready before.
func TestReadinessDelay(t *testing.T) {
	cfg := config(20, 2)
	cfg.PodStartup = time.Minute
	res := run(t, cfg, fastUp(spec(1, 100, podsMetric("rps", 100_000))), constant(20, 1_000_000))
	first := res.Steps[0]
	if !first.Rescaled || first.Replicas <= 2 {
		t.Fatalf("first step did not scale up: %+v", first)
	}
	startupSteps := int(cfg.PodStartup / cfg.Step)
	for i := 1; i < startupSteps; i++ {
		st := res.Steps[i]
		if st.Ready != 2 {
			t.Errorf("step %d: %d ready, want the 2 old pods while the new ones start", i, st.Ready)
		}
		if st.Values[0] != 1_000_000/2 {
			t.Errorf("step %d: per-pod value %d, want the load over the 2 ready pods", i, st.Values[0])
		}
	}
	if st := res.Steps[startupSteps]; st.Ready != first.Replicas {
		t.Errorf("after the startup %d of %d pods are ready", st.Ready, first.Replicas)
	}
}

// External metrics replay as recorded: the replica count does not change
// them, and an AverageValue target asks for ceil(value / target).
func TestExternalReplayedAsRecorded(t *testing.T) {
	values := Series{Values: make([]int64, 60)}
	for i := range values.Values {
		values.Values[i] = int64(1000 * (10 + 5*(i/20))) // 10, 15, 20
	}
	cfg := config(60, 1)
	res := run(t, cfg, fastUp(spec(1, 50, externalMetric("queue", 2000))), values)
	for i, st := range res.Steps {
		if st.Values[0] != values.Values[i] {
			t.Fatalf("step %d read %d, recorded %d", i, st.Values[0], values.Values[i])
		}
	}
	for _, at := range []int{19, 39, 59} {
		want := int32(math.Ceil(float64(values.Values[at]) / 2000))
		if got := res.Steps[at].Replicas; got != want {
			t.Errorf("step %d: %d replicas, want %d", at, got, want)
		}
	}
}

// A gap in the data is a failed metric, as in the controller: no decision
// (never a silent zero); with treatMissingAs Zero it reads 0.
func TestGapIsMissingMetric(t *testing.T) {
	values := constant(40, 10_000)
	for i := 10; i < 40; i++ {
		values.Values[i] = Missing
	}
	cfg := config(40, 5)
	s := spec(1, 50, externalMetric("queue", 2000))
	res := run(t, cfg, s, values)
	for i := 10; i < 40; i++ {
		st := res.Steps[i]
		if !st.Failed || st.Replicas != 5 || !strings.Contains(st.Reason, "unable to get external metric") {
			t.Fatalf("step %d in the gap: %+v, want a failed metric holding 5 replicas", i, st)
		}
	}
	if sum := res.Summary; sum.FailedSteps != 30 {
		t.Errorf("failed steps %d, want 30", sum.FailedSteps)
	}
	s.MetricOptions = []evaluation.MetricOptions{{MissingAsZero: true}}
	res = run(t, cfg, s, values)
	if last := res.Steps[39]; last.Failed || last.Values[0] != 0 || last.Replicas != 1 {
		t.Errorf("with treatMissingAs Zero the gap reads 0 and scales down to min: %+v", last)
	}
}

// Several specs compared on the same history: a lower target holds more
// replicas and is less often under-provisioned.
func TestCompareSpecs(t *testing.T) {
	load := Series{Values: make([]int64, 240)}
	for i := range load.Values {
		load.Values[i] = int64(200_000 + 150_000*math.Sin(float64(i)/20))
	}
	cfg := config(240, 3)
	cfg.PodStartup = 30 * time.Second
	tight := run(t, cfg, spec(1, 40, podsMetric("rps", 50_000)), load)
	loose := run(t, cfg, spec(1, 40, podsMetric("rps", 100_000)), load)
	if tight.Summary.ReplicaHours <= loose.Summary.ReplicaHours {
		t.Errorf("replica-hours: target 50 %.2f, target 100 %.2f; want more for the lower target", tight.Summary.ReplicaHours, loose.Summary.ReplicaHours)
	}
	if tight.Summary.MaxReplicas <= loose.Summary.MaxReplicas {
		t.Errorf("max replicas: %d vs %d", tight.Summary.MaxReplicas, loose.Summary.MaxReplicas)
	}
	if tight.Summary.ScaleEvents == 0 || loose.Summary.ScaleEvents == 0 {
		t.Errorf("a varying load scaled neither spec: %+v %+v", tight.Summary, loose.Summary)
	}
}

// The default scale-up limit (no behavior) is upstream's max(2×current, 4).
func TestDefaultScaleUpLimit(t *testing.T) {
	cfg := config(2, 2)
	cfg.PodStartup = 0
	res := run(t, cfg, spec(1, 100, podsMetric("rps", 1000)), constant(2, 100_000))
	if got := res.Steps[0].Replicas; got != 4 {
		t.Errorf("first scale-up to %d, want the limit max(2×2, 4) = 4", got)
	}
}

func TestValidate(t *testing.T) {
	good := spec(1, 10, podsMetric("rps", 1000))
	cfg := config(3, 1)
	for _, tc := range []struct {
		name   string
		cfg    Config
		spec   evaluation.Spec
		series []Series
		want   string
	}{
		{"no step", Config{Steps: 3}, good, []Series{constant(3, 1)}, "step must be positive"},
		{"empty range", config(0, 1), good, []Series{{}}, "no step"},
		{"too many", config(MaxSteps+1, 1), good, []Series{{}}, "exceed the limit"},
		{"series count", cfg, good, nil, "0 series for 1 metrics"},
		{"short series", cfg, good, []Series{constant(2, 1)}, "spec.metrics[0]: 2 values for 3 steps"},
		{"no metric", cfg, spec(1, 10), nil, "no metric"},
		{"resource", cfg, spec(1, 10, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](50)}}}),
			[]Series{constant(3, 1)}, "spec.metrics[0]: resource metric cpu: a Utilization target needs the pods' requests"},
		{"invalid", cfg, spec(1, 10, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{}}),
			[]Series{constant(3, 1)}, "spec.metrics[0]: invalid pods metric source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(tc.cfg, tc.spec, tc.series)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A spec with minReplicas 0 starting at zero wakes on its External metric
// (the default scale-up limit allows 4 from zero; a Percent policy alone
// would allow none, as upstream).
func TestFromZero(t *testing.T) {
	values := constant(20, 0)
	for i := 10; i < 20; i++ {
		values.Values[i] = 50_000
	}
	res := run(t, config(20, 0), spec(0, 10, externalMetric("queue", 10_000)), values)
	if got := []int32{res.Steps[9].Replicas, res.Steps[10].Replicas, res.Steps[19].Replicas}; got[0] != 0 || got[1] != 4 || got[2] != 5 {
		t.Errorf("replicas before, at and after the wake-up: %v, want [0 4 5]", got)
	}
}

// A ClusterProportional metric replays from the recorded cluster size: the
// replica count follows the node count as the controller's would.
func TestProportionalReplay(t *testing.T) {
	s := spec(1, 100)
	s.Proportional = []evaluation.ProportionalSource{{Index: 0, Source: v1alpha1.ClusterProportionalSource{
		Linear: &v1alpha1.LinearParams{NodesPerReplica: 2, Min: 1, Max: 100},
	}}}
	sizes := make([]proportional.ClusterSize, 8)
	for i := range sizes {
		nodes := 4
		if i >= 4 {
			nodes = 10
		}
		sizes[i] = proportional.ClusterSize{Nodes: nodes, Cores: 4 * nodes, SchedulableNodes: nodes, SchedulableCores: 4 * nodes}
	}
	sizes[2].Nodes = -1 // no node count at this step: the metric fails
	res := run(t, config(len(sizes), 1), fastUp(s), Series{Sizes: sizes})
	got := make([]int32, len(res.Steps))
	for i, st := range res.Steps {
		got[i] = st.Replicas
	}
	if want := []int32{2, 2, 2, 2, 5, 5, 5, 5}; !slices.Equal(got, want) {
		t.Errorf("replicas %v, want %v (4 nodes / 2, then 10 nodes / 2)", got, want)
	}
	if !res.Steps[2].Failed {
		t.Errorf("a step without a node count decided: %+v", res.Steps[2])
	}
}

// A ClusterProportional metric whose parameters come from a ConfigMap, or
// that counts a node selector's nodes, is refused, naming the metric.
func TestProportionalRefused(t *testing.T) {
	for _, src := range []v1alpha1.ClusterProportionalSource{
		{ConfigMapRef: &v1alpha1.ConfigMapKeyRef{Name: "dns-autoscaler"}},
		{Linear: &v1alpha1.LinearParams{NodesPerReplica: 1}, NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}},
	} {
		s := spec(1, 10)
		s.Proportional = []evaluation.ProportionalSource{{Index: 1, Source: src}}
		err := ValidateMetrics(&s, nil)
		if err == nil || !strings.Contains(err.Error(), "spec.metrics[1] (ClusterProportional)") {
			t.Errorf("%+v: %v, want a refusal naming spec.metrics[1]", src, err)
		}
	}
}
