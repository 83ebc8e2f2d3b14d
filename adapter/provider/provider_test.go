package provider

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
)

var pods = schema.GroupResource{Resource: "pods"}

type fixture struct {
	reg      *prometheus.Registry
	prom     *promfake.Client
	lister   *objfake.Lister
	provider *Provider
}

func newFixture(t *testing.T, threshold int) *fixture {
	t.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.Parse(rulestest.Data(t, rulestest.PodsAndQueue), mapper)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		prom: &promfake.Client{SeriesByMatch: map[string][]promfake.Series{
			`{__name__="http_requests_total",namespace!="",pod!=""}`: {{Name: "http_requests_total", Labels: map[string]string{"namespace": "ns", "pod": "p"}}},
			`{__name__="queue_messages_ready",namespace!=""}`:        {{Name: "queue_messages_ready", Labels: map[string]string{"namespace": "ns", "queue": "q"}}},
		}},
		lister: &objfake.Lister{},
	}
	d, err := discovery.New(discovery.Options{Client: f.prom, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(set.Rules)
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.reg = prometheus.NewRegistry()
	f.provider, err = New(Options{Prom: f.prom, Discovery: d, Lister: f.lister, Mapper: mapper, NamespaceQueryThreshold: threshold, Registerer: f.reg})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sample(labels model.Metric, v float64, ts int64) *model.Sample {
	return &model.Sample{Metric: labels, Value: model.SampleValue(v), Timestamp: model.Time(ts)}
}

func info(metric string) provider.CustomMetricInfo {
	return provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pod"}, Namespaced: true, Metric: metric}
}

func TestGetMetricByName(t *testing.T) {
	f := newFixture(t, 0)
	want := `sum(rate(http_requests_total{namespace="ns",pod="p"}[2m])) by (pod)`
	f.prom.Answers = map[string]model.Vector{want: {sample(model.Metric{"pod": "p"}, 1.5, 1700000000123)}}
	v, err := f.provider.GetMetricByName(context.Background(), types.NamespacedName{Namespace: "ns", Name: "p"}, info("http_requests_per_second"), labels.Everything())
	if err != nil {
		t.Fatalf("%v (queries %q)", err, f.prom.Queries())
	}
	if v.Value.MilliValue() != 1500 || v.DescribedObject.Kind != "Pod" || v.DescribedObject.Name != "p" || v.Metric.Name != "http_requests_per_second" {
		t.Errorf("value = %+v", v)
	}
	if got := v.Timestamp.UnixMilli(); got != 1700000000123 {
		t.Errorf("timestamp = %d, want the sample's own", got)
	}
}

func TestGetMetricBySelector(t *testing.T) {
	f := newFixture(t, 0)
	for _, n := range []string{"a", "b", "c"} {
		f.lister.Objects = append(f.lister.Objects, objfake.Object{Resource: pods, Namespace: "ns", Name: n, Labels: map[string]string{"app": "web"}})
	}
	f.lister.Objects = append(f.lister.Objects, objfake.Object{Resource: pods, Namespace: "ns", Name: "other", Labels: map[string]string{"app": "db"}})
	q := `sum(rate(http_requests_total{namespace="ns",pod=~"a|b|c"}[2m])) by (pod)`
	f.prom.Answers = map[string]model.Vector{q: {
		sample(model.Metric{"pod": "a"}, 1, 1000), sample(model.Metric{"pod": "c"}, math.NaN(), 2000),
	}}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	list, err := f.provider.GetMetricBySelector(context.Background(), "ns", sel, info("http_requests_per_second"), labels.Everything())
	if err != nil {
		t.Fatalf("%v (queries %q)", err, f.prom.Queries())
	}
	var got []string
	for _, it := range list.Items {
		got = append(got, fmt.Sprintf("%s=%dm@%d", it.DescribedObject.Name, it.Value.MilliValue(), it.Timestamp.UnixMilli()))
	}
	if strings.Join(got, " ") != "a=1000m@1000 c=0m@2000" {
		t.Errorf("items = %v (b has no sample and is dropped; NaN is served as 0)", got)
	}
}

func TestNamespaceQueryAboveThreshold(t *testing.T) {
	f := newFixture(t, 2)
	var answer model.Vector
	for i := range 5 {
		name := fmt.Sprintf("p%d", i)
		if i < 3 {
			f.lister.Objects = append(f.lister.Objects, objfake.Object{Resource: pods, Namespace: "ns", Name: name})
		}
		answer = append(answer, sample(model.Metric{"pod": model.LabelValue(name)}, float64(i), 1000))
	}
	f.prom.Answers = map[string]model.Vector{`sum(rate(http_requests_total{namespace="ns",pod!=""}[2m])) by (pod)`: answer}
	list, err := f.provider.GetMetricBySelector(context.Background(), "ns", labels.Everything(), info("http_requests_per_second"), labels.Everything())
	if err != nil {
		t.Fatalf("%v (queries %q)", err, f.prom.Queries())
	}
	if len(list.Items) != 3 {
		t.Fatalf("got %d items, want the 3 listed pods only", len(list.Items))
	}
	for i, it := range list.Items {
		if it.DescribedObject.Name != fmt.Sprintf("p%d", i) || it.Value.MilliValue() != int64(i*1000) {
			t.Errorf("item %d = %s %v", i, it.DescribedObject.Name, it.Value.String())
		}
	}
}

func TestErrors(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	name := types.NamespacedName{Namespace: "ns", Name: "p"}

	_, err := f.provider.GetMetricByName(ctx, name, info("no_such_metric"), labels.Everything())
	if !apierrors.IsNotFound(err) {
		t.Errorf("unknown metric: err = %v, want 404", err)
	}

	gt, _ := labels.NewRequirement("code", selection.GreaterThan, []string{"4"})
	_, err = f.provider.GetMetricByName(ctx, name, info("http_requests_per_second"), labels.NewSelector().Add(*gt))
	if !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported operator: err = %v, want 400", err)
	}

	f.prom.Err = errors.New(`dial tcp 10.0.0.1:9090: secret-token in url`)
	_, err = f.provider.GetMetricByName(ctx, name, info("http_requests_per_second"), labels.Everything())
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 500 {
		t.Fatalf("prometheus failure: err = %v, want 500", err)
	}
	if msg := err.Error(); strings.Contains(msg, "10.0.0.1") || strings.Contains(msg, "secret") || strings.Contains(msg, "http_requests_total") {
		t.Errorf("500 leaks details: %q", msg)
	}
	f.prom.Err = nil

	f.prom.Answers = map[string]model.Vector{`sum(rate(http_requests_total{namespace="ns",pod="p"}[2m])) by (pod)`: {}}
	_, err = f.provider.GetMetricByName(ctx, name, info("http_requests_per_second"), labels.Everything())
	if !apierrors.IsNotFound(err) {
		t.Errorf("no sample: err = %v, want 404", err)
	}

	f.prom.Answers = map[string]model.Vector{`sum(rate(http_requests_total{namespace="ns",pod="p"}[2m])) by (pod)`: {sample(model.Metric{"pod": "p"}, math.Inf(1), 1)}}
	_, err = f.provider.GetMetricByName(ctx, name, info("http_requests_per_second"), labels.Everything())
	if !apierrors.IsNotFound(err) {
		t.Errorf("+Inf sample: err = %v, want 404 (dropped, never served as a value)", err)
	}
}

func TestGetExternalMetric(t *testing.T) {
	f := newFixture(t, 0)
	q := `sum(queue_messages_ready{queue="orders",namespace="ns"}) by (queue)`
	f.prom.Answers = map[string]model.Vector{q: {sample(model.Metric{"queue": "orders"}, 250, 5000)}}
	sel := labels.SelectorFromSet(labels.Set{"queue": "orders"})
	list, err := f.provider.GetExternalMetric(context.Background(), "ns", sel, provider.ExternalMetricInfo{Metric: "queue_messages_ready"})
	if err != nil {
		t.Fatalf("%v (queries %q)", err, f.prom.Queries())
	}
	if len(list.Items) != 1 || list.Items[0].Value.Value() != 250 || list.Items[0].MetricLabels["queue"] != "orders" || list.Items[0].Timestamp.UnixMilli() != 5000 {
		t.Errorf("items = %+v", list.Items)
	}
	if _, err := f.provider.GetExternalMetric(context.Background(), "ns", labels.Everything(), provider.ExternalMetricInfo{Metric: "nope"}); !apierrors.IsNotFound(err) {
		t.Errorf("unknown external metric: err = %v", err)
	}
}

func TestListAll(t *testing.T) {
	f := newFixture(t, 0)
	if n := len(f.provider.ListAllMetrics()); n != 2 {
		t.Errorf("custom metrics = %v", f.provider.ListAllMetrics())
	}
	if ext := f.provider.ListAllExternalMetrics(); len(ext) != 1 {
		t.Errorf("external metrics = %v", ext)
	}
}

func TestQuantityRange(t *testing.T) {
	for _, v := range []float64{0, 0.0004, 1.5, -2.25, 1e12, 1e300, -1e300} {
		q := sampleValue{value: v, timestamp: metaNow()}.quantity()
		got := q.AsApproximateFloat64()
		if math.Abs(v) < 1e15 && math.Abs(got-math.Round(v*1000)/1000) > 1e-9 {
			t.Errorf("quantity(%g) = %s", v, q.String())
		}
		if math.Signbit(got) != math.Signbit(v) && v != 0 {
			t.Errorf("quantity(%g) changed sign: %s", v, q.String())
		}
	}
}

func metaNow() metav1.Time { return metav1.NewTime(time.Unix(0, 0)) }

func TestRequestOutcomesAreRecorded(t *testing.T) {
	f := newFixture(t, 0)
	ctx := context.Background()
	name := types.NamespacedName{Namespace: "ns", Name: "p"}
	_, _ = f.provider.GetMetricByName(ctx, name, info("no_such_metric"), labels.Everything())
	_, _ = f.provider.GetExternalMetric(ctx, "ns", labels.Everything(), provider.ExternalMetricInfo{Metric: "nope"})
	f.prom.Answers = map[string]model.Vector{`sum(rate(http_requests_total{namespace="ns",pod="p"}[2m])) by (pod)`: {sample(model.Metric{"pod": "p"}, 1, 1)}}
	if _, err := f.provider.GetMetricByName(ctx, name, info("http_requests_per_second"), labels.Everything()); err != nil {
		t.Fatal(err)
	}
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "ebbflow_adapter_api_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			got[strings.TrimSpace(key)] = m.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{
		"group=custom.metrics.k8s.io outcome=not_found":   1,
		"group=external.metrics.k8s.io outcome=not_found": 1,
		"group=custom.metrics.k8s.io outcome=success":     1,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("recorded outcomes %v, want %v", got, want)
	}
}
