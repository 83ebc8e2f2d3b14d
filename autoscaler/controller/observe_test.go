package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// answer is what randomClient says to one question: samples or a value, or
// an error, after a delay that shuffles the order in which reads end.
type answer struct {
	samples replicas.Samples
	values  []int64
	err     error
	delay   time.Duration
}

// randomClient answers by metric name (resource name for PodResources) and
// records the greatest number of reads it saw in flight at once.
type randomClient struct {
	answers map[string]answer

	mu                sync.Mutex
	inFlight, maxSeen int
}

func (c *randomClient) ask(name string) answer {
	c.mu.Lock()
	c.inFlight++
	c.maxSeen = max(c.maxSeen, c.inFlight)
	c.mu.Unlock()
	a, ok := c.answers[name]
	if !ok {
		a = answer{err: fmt.Errorf("no answer for %s", name)}
	}
	time.Sleep(a.delay)
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
	return a
}

func (c *randomClient) PodResources(_ context.Context, _ string, _ labels.Selector, r corev1.ResourceName, _ string) (replicas.Samples, time.Time, error) {
	a := c.ask(string(r))
	return a.samples, start, a.err
}

func (c *randomClient) PodMetric(_ context.Context, _, m string, _, _ labels.Selector) (replicas.Samples, time.Time, error) {
	a := c.ask(m)
	return a.samples, start, a.err
}

func (c *randomClient) ObjectMetric(_ context.Context, _, m string, _ autoscalingv2.CrossVersionObjectReference, _ labels.Selector) (int64, time.Time, error) {
	a := c.ask(m)
	if len(a.values) == 0 {
		return 0, start, a.err
	}
	return a.values[0], start, a.err
}

func (c *randomClient) ExternalMetric(_ context.Context, _, m string, _ labels.Selector) ([]int64, time.Time, error) {
	a := c.ask(m)
	return a.values, start, a.err
}

// randomCase draws 1 to 6 metrics of every source type (some invalid, some
// sharing a question) and an answer for each: a value around the target or
// one of upstream's errors.
func randomCase(r *rand.Rand, pods int) ([]autoscalingv2.MetricSpec, map[string]answer) {
	answers := map[string]answer{}
	n := 1 + r.IntN(6)
	specs := make([]autoscalingv2.MetricSpec, 0, n)
	errs := []error{metrics.ErrNoCustomMetrics, metrics.ErrNoExternalMetrics, metrics.ErrNoResourceMetrics, errors.New("adapter unavailable"), context.DeadlineExceeded}
	for range n {
		name := fmt.Sprintf("m%d", r.IntN(4)) // collisions: identical questions
		var spec autoscalingv2.MetricSpec
		switch r.IntN(5) {
		case 0:
			spec = podsMetric(name, "10")
		case 1:
			spec = externalMetric(name, "10")
		case 2:
			q := resource.MustParse("10")
			spec = autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
				DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "svc"},
				Metric:          autoscalingv2.MetricIdentifier{Name: name},
				Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q},
			}}
		case 3:
			name = string(corev1.ResourceCPU)
			spec = autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(50))},
			}}
		default: // invalid: a selector that does not parse, or no source
			if r.IntN(2) == 0 {
				spec = externalMetric(name, "10")
				spec.External.Metric.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}
			} else {
				spec = autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType}
			}
		}
		specs = append(specs, spec)
		a := answer{delay: time.Duration(r.IntN(3)) * time.Millisecond}
		if r.IntN(3) == 0 {
			a.err = errs[r.IntN(len(errs))]
		} else {
			per := int64(1+r.IntN(30)) * 1000
			a.values = []int64{per * int64(pods)}
			a.samples = replicas.Samples{}
			for j := range pods {
				a.samples[podName("web", j)] = replicas.Sample{Value: per * 10, Timestamp: start, Window: time.Minute}
			}
		}
		if _, seen := answers[name]; !seen {
			answers[name] = a
		}
	}
	return specs, answers
}

// outcomeOf runs one evaluation of spec against answers with the given
// per-evaluation bound and returns everything it wrote, in order: API
// actions on the HPA and the scale, and events.
func outcomeOf(t *testing.T, specs []autoscalingv2.MetricSpec, answers map[string]answer, pods int, perEvaluation int) (writes []runtime.Object, scales []int32, events []string, maxSeen int) {
	f := newFixture(t)
	f.cfg.MetricReadsPerEvaluation = perEvaluation
	client := &randomClient{answers: answers}
	f.deps = func(d *Deps) { d.Metrics = client }
	f.target("web", int32(pods), int32(pods))
	f.pods("web", pods)
	f.seedHPA(newHPA("web", "web", 1, 20, specs...))
	f.build()
	_, _ = f.sync(hpaKey)
	for _, a := range f.kube.Actions() {
		if u, ok := a.(core.UpdateAction); ok {
			writes = append(writes, u.GetObject())
		}
		if p, ok := a.(core.PatchAction); ok {
			writes = append(writes, &metav1.Status{Message: string(p.GetPatch())})
		}
	}
	for {
		select {
		case e := <-f.recorder.Events:
			events = append(events, e)
		default:
			return writes, f.scaleUpdates(), events, client.maxSeen
		}
	}
}

// TestConcurrentReadsDecideAsSequential: on random specs and answers
// (errors in any position, invalid specs, identical questions), reading the
// metrics concurrently writes exactly what reading them one after the other
// (upstream) writes: status (currentMetrics and conditions in spec order),
// the decision record, the scale, and the events in the same order.
func TestConcurrentReadsDecideAsSequential(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 2026))
	concurrent := 0
	for i := range 150 {
		pods := 1 + r.IntN(3)
		specs, answers := randomCase(r, pods)
		seqW, seqS, seqE, seqMax := outcomeOf(t, specs, answers, pods, 1)
		conW, conS, conE, conMax := outcomeOf(t, specs, answers, pods, 8)
		if seqMax > 1 {
			t.Fatalf("case %d: sequential reads had %d in flight", i, seqMax)
		}
		if conMax > 1 {
			concurrent++
		}
		if !apiequality.Semantic.DeepEqual(seqW, conW) {
			t.Errorf("case %d (%d metrics): writes differ\nsequential: %v\nconcurrent: %v", i, len(specs), seqW, conW)
		}
		if !slices.Equal(seqS, conS) {
			t.Errorf("case %d: scale writes %v, sequential %v", i, conS, seqS)
		}
		if !slices.Equal(seqE, conE) {
			t.Errorf("case %d: events %q, sequential %q", i, conE, seqE)
		}
	}
	if concurrent == 0 {
		t.Error("no case read two metrics at once: the property was not exercised")
	}
}

// TestReadLimiterBounds checks both bounds: one evaluation never has more
// than perEvaluation reads in flight, the controller never more than its
// global slots, and a read that cannot get a slot before the context ends
// fails with the context's error.
func TestReadLimiterBounds(t *testing.T) {
	l := newReadLimiter(3, 4, nil)
	var mu sync.Mutex
	inFlight, maxSeen := 0, 0
	read := func(context.Context, int) {
		mu.Lock()
		inFlight++
		maxSeen = max(maxSeen, inFlight)
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
	}
	jobs := []int{0, 1, 2, 3, 4, 5, 6, 7}
	l.run(context.Background(), jobs, read, func(int, error) { t.Error("no read may fail") })
	if maxSeen != 3 {
		t.Errorf("one evaluation: %d reads in flight at most, want 3", maxSeen)
	}
	maxSeen = 0
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { l.run(context.Background(), jobs, read, func(int, error) { t.Error("no read may fail") }) })
	}
	wg.Wait()
	if maxSeen > 4 || maxSeen < 3 {
		t.Errorf("four evaluations: %d reads in flight at most, want 3 or 4 (global bound 4)", maxSeen)
	}

	full := newReadLimiter(2, 1, nil)
	full.slots <- struct{}{} // every slot taken
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var failed []int
	full.run(ctx, []int{0, 2}, func(context.Context, int) { t.Error("read without a slot") }, func(i int, err error) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("failed(%d, %v), want context.Canceled", i, err)
		}
		mu.Lock()
		failed = append(failed, i)
		mu.Unlock()
	})
	slices.Sort(failed)
	if !slices.Equal(failed, []int{0, 2}) {
		t.Errorf("failed = %v, want [0 2]", failed)
	}
}
