package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	"github.com/ebbflow/ebbflow/adapter/prom"
	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// backendRules serve http_requests_per_second from the default backend and
// queue_messages_ready (external) from the "team" backend.
const backendRules = `
rules:
- seriesQuery: '{__name__="http_requests_total",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{__name__="queue_messages_ready",namespace!=""}'
  backend: team
  resources: {overrides: {namespace: {resource: namespace}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

// TestQueriesGoToTheRulesBackend: each request is sent to its rule's backend only,
// and a backend that fails fails only its own metrics, with the generic 500.
func TestQueriesGoToTheRulesBackend(t *testing.T) {
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.ParseWith([]byte(backendRules), rules.Options{Mapper: mapper, Backends: []string{"team"}})
	if err != nil {
		t.Fatal(err)
	}
	httpQ := `sum(rate(http_requests_total{namespace="ns",pod="p"}[2m])) by (pod)`
	queueQ := `sum(queue_messages_ready{namespace="ns"}) by (queue)`
	def := &promfake.Client{
		SeriesByMatch: map[string][]promfake.Series{`{__name__="http_requests_total",namespace!="",pod!=""}`: {{Name: "http_requests_total", Labels: map[string]string{"namespace": "ns", "pod": "p"}}}},
		Answers:       map[string]model.Vector{httpQ: {sample(model.Metric{"pod": "p"}, 2, 1700000000000)}},
	}
	team := &promfake.Client{
		SeriesByMatch: map[string][]promfake.Series{`{__name__="queue_messages_ready",namespace!=""}`: {{Name: "queue_messages_ready", Labels: map[string]string{"namespace": "ns", "queue": "q"}}}},
		Answers:       map[string]model.Vector{queueQ: {sample(model.Metric{"queue": "q"}, 7, 1700000000000)}},
	}
	named := prom.Backends{"team": team}
	d, err := discovery.New(discovery.Options{Client: def, Backends: named, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(set.Rules)
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Prom: def, Backends: named, Discovery: d, Lister: &objfake.Lister{}, Mapper: mapper, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	getHTTP := func() error {
		_, err := p.GetMetricByName(ctx, types.NamespacedName{Namespace: "ns", Name: "p"}, info("http_requests_per_second"), labels.Everything())
		return err
	}
	getQueue := func() (float64, error) {
		l, err := p.GetExternalMetric(ctx, "ns", labels.Everything(), cmprovider.ExternalMetricInfo{Metric: "queue_messages_ready"})
		if err != nil || len(l.Items) != 1 {
			return 0, errors.Join(err, errors.New("want one item"))
		}
		return l.Items[0].Value.AsApproximateFloat64(), nil
	}
	if err := getHTTP(); err != nil {
		t.Fatalf("default backend metric: %v", err)
	}
	if v, err := getQueue(); err != nil || v != 7 {
		t.Fatalf("team backend metric = %v, %v; want 7", v, err)
	}
	if q := def.Queries(); len(q) != 1 || q[0] != httpQ {
		t.Errorf("default backend got %q, want only the http query", q)
	}
	if q := team.Queries(); len(q) != 1 || q[0] != queueQ {
		t.Errorf("team backend got %q, want only the queue query", q)
	}

	team.SetErr(errors.New("dial tcp 10.0.0.1:9090: connection refused"))
	_, err = getQueue()
	if !apierrors.IsInternalError(err) || strings.Contains(err.Error(), "10.0.0.1") {
		t.Errorf("team down: external metric error = %v, want the generic 500", err)
	}
	if err := getHTTP(); err != nil {
		t.Errorf("team down: default backend metric failed too: %v", err)
	}
}

// TestResourceRulesBackend: resourceRules.backend sends both resources' queries to
// that backend only.
func TestResourceRulesBackend(t *testing.T) {
	text := strings.Replace(resourceRulesYAML, "CONTAINER_MEMORY_QUERY", memGrouped, 1) + "  backend: nodes\n"
	set, err := rules.ParseWith([]byte(text), rules.Options{Backends: []string{"nodes"}})
	if err != nil {
		t.Fatal(err)
	}
	def := &promfake.Client{Err: errors.New("the default backend must not be asked")}
	nodes := &promfake.Client{Answers: map[string]model.Vector{
		`sum by (node) (irate(node_cpu_usage_seconds_total{node="n1"}[4m]))`: {rsample(1.5, 0, "node", "n1")},
		`sum by (node) (node_memory_working_set_bytes{node="n1"})`:           {rsample(1<<30, 0, "node", "n1")},
	}}
	p, err := NewResource(ResourceOptions{Prom: def, Backends: prom.Backends{"nodes": nodes}, Registerer: prometheus.NewRegistry()}, set.Resource)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.NodeMetrics(context.Background(), []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("NodeMetrics = %+v, %v (default backend got %q, nodes %q)", got, err, def.Queries(), nodes.Queries())
	}
	if len(def.Queries()) != 0 || len(nodes.Queries()) != 2 {
		t.Errorf("queries: default %q, nodes %q", def.Queries(), nodes.Queries())
	}
}
