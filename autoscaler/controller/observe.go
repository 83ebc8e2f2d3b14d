package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ebbflow/ebbflow/autoscaler/decision"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// observation is the snapshot of inputs one evaluation decides from.
type observation struct {
	// scale is the target's /scale; nil when it could not be read (scaleErr).
	scale    *targetScale
	scaleErr *scaleError
	// current is the scale's spec.replicas.
	current int32
	bounds  decision.Bounds
	// gate is decision.Check(bounds): whether metrics were read.
	gate decision.Gate
	// inputsErr is set when the pods could not be determined (selector
	// problem); no metric was read then.
	inputsErr error
	shared    decision.Shared
	// readings has one entry per spec metric when the gate said to read them.
	readings []decision.Reading
	// proportional has one entry per ClusterProportional metric.
	proportional []proportionalReading
	// decideAt is when the metrics were read: upstream reads the clock again
	// before normalizing.
	decideAt time.Time
}

// observe reads everything the evaluation decides from: the scale, the pods
// its selector matches and every metric's values. Problems are recorded in
// the observation (and as conditions and events of ev), never returned.
func (ev *evaluation) observe(ctx context.Context) observation {
	var obs observation
	obs.scale, obs.scaleErr = ev.c.getScale(ctx, ev.obj)
	if obs.scaleErr != nil {
		return obs
	}
	ev.set(condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale"))
	obs.current = obs.scale.scale.Spec.Replicas
	spec := ev.obj.Spec
	obs.bounds = decision.Bounds{
		CurrentReplicas:     obs.current,
		MinReplicas:         ev.minReplicas(),
		MaxReplicas:         spec.MaxReplicas,
		ScaledToZero:        conditionTrue(ev.obj.Status, autoscalingv2.ScaledToZero),
		HasObjectOrExternal: decision.HasObjectOrExternal(spec.Metrics),
	}
	obs.gate = decision.Check(obs.bounds)
	if obs.gate.Action == decision.ComputeMetrics {
		// An Autoscaler with only ClusterProportional metrics needs no pods
		// and no metrics API.
		if len(spec.Metrics) > 0 || len(ev.obj.Proportional) == 0 {
			obs.shared, obs.inputsErr = ev.sharedInputs(obs.scale)
		}
		if obs.inputsErr == nil {
			obs.readings = ev.readMetrics(ctx)
			obs.proportional = ev.observeProportional()
		}
	}
	obs.decideAt = ev.c.deps.Clock.Now()
	return obs
}

// sharedInputs validates the scale's pod selector as upstream does (present,
// parseable, not shared with another autoscaler), lists the pods it selects
// and gathers what every metric reads. On a selector problem it records
// upstream's event and ScalingActive condition.
func (ev *evaluation) sharedInputs(ts *targetScale) (decision.Shared, error) {
	sc := ts.scale
	if sc.Status.Selector == "" {
		const msg = "selector is required"
		ev.warn("SelectorRequired", msg)
		ev.set(condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector"))
		return decision.Shared{}, errors.New(msg)
	}
	sel, err := labels.Parse(sc.Status.Selector)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		ev.warn("InvalidSelector", msg)
		ev.set(condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", msg))
		return decision.Shared{}, errors.New(msg)
	}
	if !ev.c.tracker.update(ev.key, sel) {
		return decision.Shared{}, fmt.Errorf("autoscaler %s/%s was deleted during reconciliation", ev.obj.Namespace, ev.obj.Name)
	}
	pods, err := ev.c.pods.list(ev.obj.Namespace, sel)
	if err != nil {
		return decision.Shared{}, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	if owners := ev.c.tracker.matching(ev.obj.Namespace, pods, 2); len(owners) > 1 {
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", sc.Status.Selector, objectNames(owners))
		ev.warn("AmbiguousSelector", msg)
		ev.set(condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", msg))
		return decision.Shared{}, errors.New(msg)
	}
	facts := make([]replicas.Pod, 0, len(pods))
	for _, pod := range pods {
		facts = append(facts, replicas.PodFromCore(pod))
	}
	ev.selector = sel
	return decision.Shared{
		SpecReplicas:   sc.Spec.Replicas,
		StatusReplicas: sc.Status.Replicas,
		Pods:           facts,
		Tolerances:     replicas.TolerancesFor(ev.c.cfg.Tolerance, ev.obj.Spec.Behavior),
		Timing: replicas.PodTiming{
			CPUInitializationPeriod: ev.c.cfg.CPUInitializationPeriod,
			InitialReadinessDelay:   ev.c.cfg.InitialReadinessDelay,
			Now:                     ev.now,
		},
	}, nil
}

// read fills r with one metric's values from the metrics APIs. With
// missingAsZero an empty answer of an Object or External metric reads as 0.
func (ev *evaluation) read(ctx context.Context, r *decision.Reading, missingAsZero bool) {
	m, ns, spec := ev.c.deps.Metrics, ev.obj.Namespace, r.Spec
	var err error
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		src := decision.ResourceOf(spec)
		r.Samples, r.Timestamp, err = m.PodResources(ctx, ns, ev.selector, src.Name, src.Container)
	case autoscalingv2.PodsMetricSourceType:
		var sel labels.Selector
		if sel, r.Err = metav1.LabelSelectorAsSelector(spec.Pods.Metric.Selector); r.Err != nil {
			return
		}
		r.Samples, r.Timestamp, err = m.PodMetric(ctx, ns, spec.Pods.Metric.Name, ev.selector, sel)
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
	if err != nil && missingAsZero && isEmptyAnswer(err) {
		r.Value, r.Values, r.Timestamp, err = 0, []int64{0}, ev.now, nil
	}
	if err != nil {
		ev.readFailed(r, err)
	}
}

// readFailed records a failed read of r's metric as upstream words it.
func (ev *evaluation) readFailed(r *decision.Reading, err error) {
	ev.c.deps.SelfMetrics.fetchError(string(r.Spec.Type))
	r.Err = decision.FetchError(r.Spec, ev.obj.Namespace, err)
}

// isEmptyAnswer reports whether err says the metrics API answered with no
// value (as opposed to failing).
func isEmptyAnswer(err error) bool {
	return errors.Is(err, metrics.ErrNoExternalMetrics) || errors.Is(err, metrics.ErrNoCustomMetrics) || apierrors.IsNotFound(err)
}

// objectNames names the objects behind queue keys: namespace/name for
// HorizontalPodAutoscalers, as upstream does, and Kind/namespace/name for
// other kinds.
func objectNames(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		kind, rest, _ := strings.Cut(k, "/")
		out[i] = k
		if kind == hpaKind {
			out[i] = rest
		}
	}
	return out
}
