package source

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/common/model"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	adapterprovider "github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// Series reads one metric of a spec over the range as the autoscaler would
// have read it through ebbflow-adapter: for a Pods metric the load (the sum
// of the values of the pods whose names q.PodNames matches), for a Resource
// or ContainerResource metric the load read through resourceRules (see
// readResource), for an Object
// metric its value, for an External metric the sum of its series; in
// milli-units, simulate.Missing at steps without a usable sample. It fails
// when no rule serves the metric, its query fails, or no step has a value.
func (r *Reader) Series(ctx context.Context, spec autoscalingv2.MetricSpec, q Query) (simulate.Series, error) {
	key := fmt.Sprintf("%s|%v|%s", q.Namespace, q.PodNames, describe(spec))
	if s, ok := r.cache[key]; ok {
		return s, nil
	}
	s, err := r.read(ctx, spec, q)
	if err != nil {
		return s, fmt.Errorf("%s: %w", describe(spec), err)
	}
	r.cache[key] = s
	return s, nil
}

func (r *Reader) read(ctx context.Context, spec autoscalingv2.MetricSpec, q Query) (simulate.Series, error) {
	out := simulate.Series{Values: make([]int64, r.opts.Range.Steps())}
	for i := range out.Values {
		out.Values[i] = simulate.Missing
	}
	var err error
	switch {
	case spec.Type == autoscalingv2.PodsMetricSourceType:
		err = r.readPods(ctx, spec.Pods, q, out.Values)
	case spec.Type == autoscalingv2.ObjectMetricSourceType:
		err = r.readObject(ctx, spec.Object, q, out.Values)
	case spec.Type == autoscalingv2.ExternalMetricSourceType:
		err = r.readExternal(ctx, spec.External, q, out.Values)
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		err = r.readResource(ctx, spec.Resource.Name, "", q, out.Values)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		err = r.readResource(ctx, spec.ContainerResource.Name, spec.ContainerResource.Container, q, out.Values)
	default:
		err = fmt.Errorf("%s metrics are not read from Prometheus by the simulator", spec.Type)
	}
	if err != nil {
		return out, err
	}
	for _, v := range out.Values {
		if v != simulate.Missing {
			return out, nil
		}
	}
	return out, fmt.Errorf("no value of it in Prometheus between %s and %s", r.opts.Range.Start.UTC().Format("2006-01-02T15:04:05Z"), r.opts.Range.End.UTC().Format("2006-01-02T15:04:05Z"))
}

func (r *Reader) readPods(ctx context.Context, src *autoscalingv2.PodsMetricSource, q Query, out []int64) error {
	t, err := r.custom(ctx, src.Metric.Name, podsResource)
	if err != nil {
		return err
	}
	sel, err := selector(src.Metric.Selector)
	if err != nil {
		return err
	}
	query, err := t.Rule.CustomQuery(rules.CustomRequest{Series: t.Series, Namespace: q.Namespace, Resource: podsResource, MetricSelector: sel})
	if err != nil {
		return err
	}
	label, err := t.Rule.LabelForResource(podsResource)
	if err != nil {
		return err
	}
	return r.sumBy(ctx, query, t.Rule, label, func(name string) bool { return q.PodNames == nil || q.PodNames.MatchString(name) }, out)
}

func (r *Reader) readObject(ctx context.Context, src *autoscalingv2.ObjectMetricSource, q Query, out []int64) error {
	ref := src.DescribedObject
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	mapping, err := r.opts.Mapper.RESTMapping(gk)
	if err != nil {
		return fmt.Errorf("described object %s: %w", gk, err)
	}
	gr, ns, name := mapping.Resource.GroupResource(), q.Namespace, ref.Name
	if gk.Kind == "Namespace" && gk.Group == "" {
		ns, name = "", q.Namespace
	}
	t, err := r.custom(ctx, src.Metric.Name, gr)
	if err != nil {
		return err
	}
	sel, err := selector(src.Metric.Selector)
	if err != nil {
		return err
	}
	query, err := t.Rule.CustomQuery(rules.CustomRequest{Series: t.Series, Namespace: ns, Resource: gr, Names: []string{name}, MetricSelector: sel})
	if err != nil {
		return err
	}
	label, err := t.Rule.LabelForResource(gr)
	if err != nil {
		return err
	}
	return r.sumBy(ctx, query, t.Rule, label, func(n string) bool { return n == name }, out)
}

func (r *Reader) readExternal(ctx context.Context, src *autoscalingv2.ExternalMetricSource, q Query, out []int64) error {
	metric := src.Metric.Name
	if err := r.served(rules.External, metric); err != nil {
		return err
	}
	lctx, cancel := r.requestContext(ctx)
	t, err := r.disc.LookupExternal(lctx, metric)
	cancel()
	if err != nil {
		return r.lookupError(rules.External, err)
	}
	sel, err := selector(src.Metric.Selector)
	if err != nil {
		return err
	}
	query, err := t.Rule.ExternalQuery(t.Series, q.Namespace, sel)
	if err != nil {
		return err
	}
	drop := adapterprovider.DropNaN(t.Rule, r.opts.NaNValues)
	return r.rangeQuery(ctx, t.Rule.Backend(), query, func(_ int, _ map[string]string, i int, v float64) {
		add(out, i, v, drop)
	})
}

// sumBy sums, per step, the values of the series whose label value keep
// accepts; of several series with the same label value the first counts, as
// in the adapter's answer.
func (r *Reader) sumBy(ctx context.Context, query string, rule *rules.Rule, label string, keep func(string) bool, out []int64) error {
	drop := adapterprovider.DropNaN(rule, r.opts.NaNValues)
	owner := map[string]int{}
	return r.rangeQuery(ctx, rule.Backend(), query, func(series int, lbls map[string]string, i int, v float64) {
		name := lbls[label]
		if name == "" || !keep(name) {
			return
		}
		if first, ok := owner[name]; ok && first != series {
			return
		}
		owner[name] = series
		add(out, i, v, drop)
	})
}

// add adds sample v to step i as the adapter would serve it.
func add(out []int64, i int, v float64, drop bool) {
	m, ok := adapterprovider.MilliValue(model.SampleValue(v), drop)
	if !ok {
		return
	}
	addMilli(out, i, m)
}

// custom finds the rule and series serving a custom metric on gr: the
// adapter's own lookup (discovery.LookupCustom: check, normalize, look up,
// discover on a miss), bounded by Options.Timeout.
func (r *Reader) custom(ctx context.Context, metric string, gr schema.GroupResource) (discovery.Target, error) {
	if err := r.served(rules.Custom, metric); err != nil {
		return discovery.Target{}, err
	}
	info := provider.CustomMetricInfo{GroupResource: gr, Metric: metric,
		Namespaced: discovery.MapperScope{Mapper: r.opts.Mapper}.Namespaced(gr)}
	ctx, cancel := r.requestContext(ctx)
	defer cancel()
	_, t, err := r.disc.LookupCustom(ctx, info)
	if err != nil {
		return discovery.Target{}, r.lookupError(rules.Custom, err)
	}
	return t, nil
}

// lookupError words a failed lookup: a metric nothing serves is named
// with the range searched.
func (r *Reader) lookupError(kind rules.Kind, err error) error {
	if apierrors.IsNotFound(err) {
		return r.notFound(kind)
	}
	return err
}

// served fails when no rule of the file could name metric.
func (r *Reader) served(kind rules.Kind, metric string) error {
	if err := rules.CheckMetricName(metric); err != nil {
		return err
	}
	for _, rule := range r.opts.Rules.Rules {
		if rule.Kind() == kind && rule.CanName(metric) {
			return nil
		}
	}
	return fmt.Errorf("no rule in the rule file's %s can serve it", section(kind))
}

func section(kind rules.Kind) string {
	if kind == rules.External {
		return "externalRules"
	}
	return "rules"
}

func (r *Reader) notFound(kind rules.Kind) error {
	return fmt.Errorf("no rule in the rule file's %s serves it from the series Prometheus holds between %s and %s", section(kind),
		r.opts.Range.Start.Add(-r.opts.Lookback).UTC().Format("2006-01-02T15:04:05Z"), r.opts.Range.End.UTC().Format("2006-01-02T15:04:05Z"))
}

// selector is the metric selector as the metrics API passes it: none
// selects every series.
func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("metric selector: %w", err)
	}
	return sel, nil
}

// describe names a metric spec in messages: "pods metric rps{tier=web}".
func describe(spec autoscalingv2.MetricSpec) string {
	var sel *metav1.LabelSelector
	switch {
	case spec.Pods != nil:
		sel = spec.Pods.Metric.Selector
	case spec.Object != nil:
		sel = spec.Object.Metric.Selector
	case spec.External != nil:
		sel = spec.External.Metric.Selector
	}
	return strings.ToLower(string(spec.Type)) + " metric " + evaluation.MetricName(spec) + selectorText(sel)
}

func selectorText(s *metav1.LabelSelector) string {
	if s == nil {
		return ""
	}
	return "{" + metav1.FormatLabelSelector(s) + "}"
}
