package provider

import (
	"context"
	"math"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
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
		return v == rulefile.NaNDrop
	}
	return serverDefault == rulefile.NaNDrop
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

// logError logs err once with the request's logger.
func logError(ctx context.Context, err error, msg string, kv ...any) {
	klog.FromContext(ctx).Error(err, msg, kv...)
}

// dropNaN reports whether NaN samples of rule are left out: the rule's
// nanValues, else the provider's default.
func (p *Provider) dropNaN(rule *rules.Rule) bool {
	return DropNaN(rule, p.opts.NaNValues)
}
