package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// observe reads everything the evaluation decides from into in: the scale
// (or why it could not be read), and when evaluation.ReadsMetrics says so
// the pods its selector matches, every metric's values and the cluster's
// size for ClusterProportional metrics; in.ReadAt is when it completed. It
// returns the scale read (nil when none). Problems are recorded in in, never
// returned.
func (c *Controller) observe(ctx context.Context, key string, obj *Object, in *evaluation.Input) *targetScale {
	ts, scaleErr := c.getScale(ctx, obj)
	if scaleErr != nil {
		in.ScaleErr, in.ScaleCause = scaleErr, scaleErr.cause
		in.ReadAt = c.deps.Clock.Now()
		return nil
	}
	in.Scale = evaluation.Scale{SpecReplicas: ts.scale.Spec.Replicas, StatusReplicas: ts.scale.Status.Replicas}
	if !evaluation.ReadsMetrics(in) {
		in.ReadAt = c.deps.Clock.Now()
		return ts
	}
	var sel labels.Selector
	if in.Spec.NeedsPods() {
		sel, in.Pods, in.InputsErr = c.pods(key, obj, ts)
	}
	if in.InputsErr == nil {
		// No answer older than the autoscaler's own sync period is reused
		// (docs/features.md#per-autoscaler-sync-period).
		readCtx := ctx
		if period := obj.Spec.Period(c.cfg.SyncPeriod); period > 0 {
			readCtx = metrics.WithMaxAge(ctx, period)
		}
		in.Readings = c.readMetrics(readCtx, obj, sel)
		if obj.Spec.HasForecast() {
			c.readHistories(ctx, key, obj, in.Readings, sel)
		}
		in.Proportional = c.observeProportional(ctx, key, obj)
	}
	in.ReadAt = c.deps.Clock.Now()
	return ts
}

// pods validates the scale's pod selector as upstream does (present,
// parseable, not shared with another autoscaler) and lists the pods it
// selects.
func (c *Controller) pods(key string, obj *Object, ts *targetScale) (labels.Selector, []replicas.Pod, error) {
	sc := ts.scale
	if sc.Status.Selector == "" {
		return nil, nil, &evaluation.SelectorError{EventReason: "SelectorRequired", Message: "selector is required",
			ConditionReason: "InvalidSelector", ConditionMessage: "the HPA target's scale is missing a selector"}
	}
	sel, err := labels.Parse(sc.Status.Selector)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		return nil, nil, &evaluation.SelectorError{EventReason: "InvalidSelector", Message: msg, ConditionReason: "InvalidSelector", ConditionMessage: msg}
	}
	if !c.tracker.update(key, sel) {
		return nil, nil, fmt.Errorf("autoscaler %s/%s was deleted during reconciliation", obj.Namespace, obj.Name)
	}
	pods, err := c.podSource.list(obj.Namespace, sel)
	if err != nil {
		return nil, nil, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	if owners := c.tracker.matching(obj.Namespace, pods, 2); len(owners) > 1 {
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", sc.Status.Selector, objectNames(owners))
		return nil, nil, &evaluation.SelectorError{EventReason: "AmbiguousSelector", Message: msg, ConditionReason: "AmbiguousSelector", ConditionMessage: msg}
	}
	facts := make([]replicas.Pod, 0, len(pods))
	for _, pod := range pods {
		facts = append(facts, replicas.PodFromCore(pod))
	}
	return sel, facts, nil
}

// readMetrics reads every metric of the spec, concurrently within the
// controller's bounds; out[i] is the reading of the i-th metric whatever
// the order in which the reads end. A metric whose spec is invalid is not
// read (the evaluation reports it).
func (c *Controller) readMetrics(ctx context.Context, obj *Object, sel labels.Selector) []evaluation.Reading {
	specs := obj.Spec.HPA.Metrics
	out := make([]evaluation.Reading, len(specs))
	jobs := make([]int, 0, len(specs))
	for i, spec := range specs {
		out[i] = evaluation.Reading{Spec: spec}
		if _, err := evaluation.Classify(spec); err != nil {
			continue
		}
		jobs = append(jobs, i)
	}
	c.reads.run(ctx, jobs, func(ctx context.Context, i int) {
		c.read(ctx, obj.Namespace, sel, &out[i])
	}, func(i int, err error) {
		out[i].FetchErr = err
	})
	return out
}

// read fills r with one metric's values from the metrics APIs.
func (c *Controller) read(ctx context.Context, ns string, podSel labels.Selector, r *evaluation.Reading) {
	m, spec := c.deps.Metrics, r.Spec
	var err error
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		src := evaluation.ResourceOf(spec)
		r.Samples, r.Timestamp, err = m.PodResources(ctx, ns, podSel, src.Name, src.Container)
	case autoscalingv2.PodsMetricSourceType:
		var sel labels.Selector
		if sel, r.Err = metav1.LabelSelectorAsSelector(spec.Pods.Metric.Selector); r.Err != nil {
			return
		}
		r.Samples, r.Timestamp, err = m.PodMetric(ctx, ns, spec.Pods.Metric.Name, podSel, sel)
	case autoscalingv2.ObjectMetricSourceType:
		var sel labels.Selector
		if sel, r.Err = metav1.LabelSelectorAsSelector(spec.Object.Metric.Selector); r.Err != nil {
			return
		}
		r.Value, r.Timestamp, err = m.ObjectMetric(ctx, ns, spec.Object.Metric.Name, spec.Object.DescribedObject, sel)
	case autoscalingv2.ExternalMetricSourceType:
		var sel labels.Selector
		if sel, r.Err = metav1.LabelSelectorAsSelector(spec.External.Metric.Selector); r.Err != nil {
			return
		}
		r.Values, r.Timestamp, err = m.ExternalMetric(ctx, ns, spec.External.Metric.Name, sel)
	}
	if err != nil {
		r.FetchErr, r.Empty = err, isEmptyAnswer(err)
	}
}

// isEmptyAnswer reports whether err says the metrics API answered with no
// value (as opposed to failing).
func isEmptyAnswer(err error) bool {
	return errors.Is(err, metrics.ErrNoExternalMetrics) || errors.Is(err, metrics.ErrNoCustomMetrics) || apierrors.IsNotFound(err)
}

// observeProportional reads, for every ClusterProportional metric, the
// node count of its selector and the ConfigMap it refers to, and records
// what the object depends on so that node and ConfigMap events evaluate it
// at once. The first such read starts the node and ConfigMap informers
// (lazyCluster).
func (c *Controller) observeProportional(ctx context.Context, key string, obj *Object) []evaluation.ProportionalReading {
	srcs := obj.Spec.Proportional
	if len(srcs) == 0 {
		return nil
	}
	var u usage
	out := make([]evaluation.ProportionalReading, len(srcs))
	sels := make([]labels.Selector, len(srcs))
	for i, src := range srcs {
		sels[i], out[i].SelectorErr = evaluation.NodeSelector(&src.Source)
		if out[i].SelectorErr != nil {
			continue
		}
		u.selectors = append(u.selectors, sels[i])
		if ref := src.Source.ConfigMapRef; ref != nil {
			u.configMaps = append(u.configMaps, obj.Namespace+"/"+ref.Name)
		}
	}
	w, err := c.cluster.get(ctx)
	if err != nil {
		for i, src := range srcs {
			if out[i].SelectorErr == nil {
				out[i].SizeErr = err
				if src.Source.ConfigMapRef != nil {
					out[i].ConfigMapErr = err
				}
			}
		}
		return out
	}
	// Depend first, read second: a node or ConfigMap event after the
	// reads below finds this object among the dependants and evaluates it
	// again (read first, an event between the reads and use was lost until
	// the next sync period, and a new selector's nodes were counted twice).
	w.use(key, u)
	for i, src := range srcs {
		if out[i].SelectorErr != nil {
			continue
		}
		if ref := src.Source.ConfigMapRef; ref != nil {
			out[i].ConfigMap, out[i].ConfigMapFound, out[i].ConfigMapErr = w.configMapData(obj.Namespace, ref.Name)
		}
		out[i].Size = w.size(sels[i])
	}
	return out
}

// objectNames names the objects behind queue keys: namespace/name for
// HorizontalPodAutoscalers, as upstream does, and Kind/namespace/name for
// other kinds.
func objectNames(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		kind, rest, _ := strings.Cut(k, "/")
		out[i] = k
		if kind == hpaKindName {
			out[i] = rest
		}
	}
	return out
}

// Defaults of the bounds on concurrent metric reads (Config zero values).
const (
	// DefaultMetricReadsPerEvaluation bounds the reads one evaluation has in
	// flight: an evaluation takes as long as its slowest read, not the sum.
	DefaultMetricReadsPerEvaluation = 8
	// DefaultMaxConcurrentMetricReads bounds the reads in flight over all
	// workers, to spare the metrics APIs. It is above the default workers
	// times three metrics, so that it does not limit the default setup.
	DefaultMaxConcurrentMetricReads = 512
)

// readLimiter bounds concurrent metric reads per evaluation and over the
// whole controller. Results never depend on the bounds: each read fills its
// own slot of the evaluation's readings, in spec order.
type readLimiter struct {
	perEvaluation int
	// slots holds one token per read in flight over the controller.
	slots chan struct{}
	self  *SelfMetrics
}

func newReadLimiter(perEvaluation, global int, self *SelfMetrics) *readLimiter {
	if perEvaluation <= 0 {
		perEvaluation = DefaultMetricReadsPerEvaluation
	}
	if global <= 0 {
		global = DefaultMaxConcurrentMetricReads
	}
	return &readLimiter{perEvaluation: perEvaluation, slots: make(chan struct{}, global), self: self}
}

// run calls read(ctx, i) for every index in jobs, at most perEvaluation at
// once and each holding one of the controller's slots; it returns when all
// are done. A job whose slot could not be had before ctx ended gets
// failed(i, ctx.Err()) instead.
func (l *readLimiter) run(ctx context.Context, jobs []int, read func(context.Context, int), failed func(int, error)) {
	one := func(i int) {
		if err := ctx.Err(); err != nil {
			failed(i, err)
			return
		}
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			failed(i, ctx.Err())
			return
		}
		l.self.readsInFlight(1)
		defer func() {
			l.self.readsInFlight(-1)
			<-l.slots
		}()
		read(ctx, i)
	}
	n := min(l.perEvaluation, len(jobs))
	if n <= 1 {
		for _, i := range jobs {
			one(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				j := int(next.Add(1)) - 1
				if j >= len(jobs) {
					return
				}
				one(jobs[j])
			}
		})
	}
	wg.Wait()
}
