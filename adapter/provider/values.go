package provider

import (
	"context"
	"fmt"
	"math"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/custom_metrics"

	"github.com/ebbflow/ebbflow/adapter/config"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// vectorResult is a Prometheus answer.
type vectorResult model.Vector

// sampleValue is one usable sample: finite or NaN (served as 0, as prometheus-adapter
// does, unless NaN is dropped), with its own timestamp.
type sampleValue struct {
	value     float64
	timestamp metav1.Time
	labels    map[string]string
}

// usable reports whether v can be served. Infinities cannot be represented as a
// quantity and are dropped: a missing value is handled conservatively by
// autoscalers, a made-up one is not. NaN is usable (served as 0) unless dropNaN.
func usable(v model.SampleValue, dropNaN bool) bool {
	f := float64(v)
	return !math.IsInf(f, 0) && !(dropNaN && math.IsNaN(f))
}

func toSample(s *model.Sample) sampleValue {
	v := float64(s.Value)
	if math.IsNaN(v) {
		v = 0
	}
	return sampleValue{value: v, timestamp: metav1.NewTime(s.Timestamp.Time())}
}

// byLabel indexes usable samples by the value of label; the first sample wins.
func (vr vectorResult) byLabel(label string, dropNaN bool) map[string]sampleValue {
	out := make(map[string]sampleValue, len(vr))
	for _, s := range vr {
		if !usable(s.Value, dropNaN) {
			continue
		}
		key := string(s.Metric[model.LabelName(label)])
		if _, dup := out[key]; key == "" || dup {
			continue
		}
		out[key] = toSample(s)
	}
	return out
}

// samples returns the usable samples with their labels (without __name__).
func (vr vectorResult) samples(dropNaN bool) []sampleValue {
	out := make([]sampleValue, 0, len(vr))
	for _, s := range vr {
		if !usable(s.Value, dropNaN) {
			continue
		}
		sv := toSample(s)
		sv.labels = make(map[string]string, len(s.Metric))
		for k, v := range s.Metric {
			if k != model.MetricNameLabel {
				sv.labels[string(k)] = string(v)
			}
		}
		out = append(out, sv)
	}
	return out
}

// MilliValue is the value, in milli-units, an API answer carries for a
// sample of v: false when the sample is not served (an infinity, or NaN with
// dropNaN); a NaN otherwise reads 0.
func MilliValue(v model.SampleValue, dropNaN bool) (int64, bool) {
	if !usable(v, dropNaN) {
		return 0, false
	}
	q := toSample(&model.Sample{Value: v}).quantity()
	return q.MilliValue(), true
}

// DropNaN reports whether NaN samples of rule's metrics are dropped, given
// the server's --nan-values (a rule's nanValues overrides it).
func DropNaN(rule *rules.Rule, serverDefault string) bool {
	if v := rule.NaNValues(); v != "" {
		return v == config.NaNDrop
	}
	return serverDefault == config.NaNDrop
}

// maxMilli is the largest value whose milli-units fit an int64.
const maxMilli = math.MaxInt64 / 1000

// quantity returns the value in milli-units, rounded to the nearest milli-unit.
func (s sampleValue) quantity() resource.Quantity {
	if math.Abs(s.value) < maxMilli {
		return *resource.NewMilliQuantity(int64(math.Round(s.value*1000)), resource.DecimalSI)
	}
	// Too large for milli-units: keep 15 significant digits and a decimal exponent.
	exp := int(math.Ceil(math.Log10(math.Abs(s.value)))) - 15
	return *resource.NewScaledQuantity(int64(s.value/math.Pow10(exp)), resource.Scale(exp))
}

// metricIdentifier names the metric and, when given, its selector.
func metricIdentifier(metric string, sel labels.Selector) (custom_metrics.MetricIdentifier, error) {
	id := custom_metrics.MetricIdentifier{Name: metric}
	if sel == nil || sel.Empty() {
		return id, nil
	}
	ls, err := labelSelectorOf(sel)
	if err != nil {
		return id, err
	}
	id.Selector = ls
	return id, nil
}

// labelSelectorOf converts a parsed selector into the API's LabelSelector, which
// has no "!=": a != v becomes "a notin (v)", which means the same (a series without
// the label matches both). = and == become matchLabels, in, notin, exists and
// !exists keep their operator. gt and lt have no LabelSelector form; they never get
// here, since no query can be rendered for them.
func labelSelectorOf(sel labels.Selector) (*metav1.LabelSelector, error) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil, fmt.Errorf("selector %q selects nothing", sel.String())
	}
	ls := &metav1.LabelSelector{}
	for _, r := range reqs {
		expr := metav1.LabelSelectorRequirement{Key: r.Key(), Values: r.ValuesUnsorted()}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals:
			if ls.MatchLabels == nil {
				ls.MatchLabels = map[string]string{}
			}
			if old, dup := ls.MatchLabels[r.Key()]; dup && old != expr.Values[0] {
				// k=a,k=b cannot be one map entry; keep both as In requirements.
				ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: r.Key(), Operator: metav1.LabelSelectorOpIn, Values: expr.Values})
				continue
			}
			ls.MatchLabels[r.Key()] = expr.Values[0]
			continue
		case selection.NotEquals, selection.NotIn:
			expr.Operator = metav1.LabelSelectorOpNotIn
		case selection.In:
			expr.Operator = metav1.LabelSelectorOpIn
		case selection.Exists:
			expr.Operator, expr.Values = metav1.LabelSelectorOpExists, nil
		case selection.DoesNotExist:
			expr.Operator, expr.Values = metav1.LabelSelectorOpDoesNotExist, nil
		default:
			return nil, fmt.Errorf("operator %q has no label selector form", r.Operator())
		}
		ls.MatchExpressions = append(ls.MatchExpressions, expr)
	}
	return ls, nil
}

// logError logs err once with the request's logger.
func logError(ctx context.Context, err error, msg string, kv ...any) {
	klog.FromContext(ctx).Error(err, msg, kv...)
}

// dropNaN reports whether NaN samples of rule are left out: the rule's
// nanValues, else the provider's default.
func (p *Provider) dropNaN(rule *rules.Rule) bool {
	return DropNaN(rule, p.opts.NaNValues)
}
