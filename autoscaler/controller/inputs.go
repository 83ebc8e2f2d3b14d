package controller

import (
	"errors"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// metricInputs validates the scale's pod selector as upstream does (present,
// parseable, not shared with another autoscaler), lists the pods it selects
// and gathers what the metrics of this reconcile share. On a selector
// problem it records upstream's event and ScalingActive condition.
func (p *pass) metricInputs(sc *autoscalingv1.Scale) (metricInputs, error) {
	if sc.Status.Selector == "" {
		const msg = "selector is required"
		p.warn("SelectorRequired", msg)
		p.set(condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector"))
		return metricInputs{}, errors.New(msg)
	}
	sel, err := labels.Parse(sc.Status.Selector)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		p.warn("InvalidSelector", msg)
		p.set(condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", msg))
		return metricInputs{}, errors.New(msg)
	}
	if !p.c.tracker.update(p.key, sel) {
		return metricInputs{}, fmt.Errorf("autoscaler %s/%s was deleted during reconciliation", p.obj.Namespace, p.obj.Name)
	}
	pods, err := p.c.pods.list(p.obj.Namespace, sel)
	if err != nil {
		return metricInputs{}, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	if owners := p.c.tracker.matching(p.obj.Namespace, pods, 2); len(owners) > 1 {
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", sc.Status.Selector, objectNames(owners))
		p.warn("AmbiguousSelector", msg)
		p.set(condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", msg))
		return metricInputs{}, errors.New(msg)
	}
	facts := make([]replicas.Pod, 0, len(pods))
	for _, pod := range pods {
		facts = append(facts, replicas.PodFromCore(pod))
	}
	return metricInputs{
		namespace:      p.obj.Namespace,
		specReplicas:   sc.Spec.Replicas,
		statusReplicas: sc.Status.Replicas,
		selector:       sel,
		pods:           facts,
		tolerances:     replicas.TolerancesFor(p.c.cfg.Tolerance, p.obj.Spec.Behavior),
		timing: replicas.PodTiming{
			CPUInitializationPeriod: p.c.cfg.CPUInitializationPeriod,
			InitialReadinessDelay:   p.c.cfg.InitialReadinessDelay,
			Now:                     p.now,
		},
	}, nil
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
