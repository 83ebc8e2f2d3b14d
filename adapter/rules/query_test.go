package rules

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

const goldenTemplate = `sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[1m])) by (<<.GroupBy>>)`

func podRule(t *testing.T, metricsQuery string) *Rule {
	t.Helper()
	return mustCompile(t, rulefile.DiscoveryRule{
		SeriesQuery:  `{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}`,
		Resources:    rulefile.ResourceMapping{Template: "<<.Resource>>"},
		MetricsQuery: metricsQuery,
	})
}

func TestCustomQueryGolden(t *testing.T) {
	r := podRule(t, goldenTemplate)
	got, err := r.CustomQuery(CustomRequest{
		Series:    "container_some_count_total",
		Namespace: "somens",
		Resource:  podsGR,
		Names:     []string{"somepod1", "somepod2"},
	})
	want := `sum(rate(container_some_count_total{namespace="somens",pod=~"somepod1|somepod2",container!="POD"}[1m])) by (pod)`
	if err != nil || got != want {
		t.Fatalf("CustomQuery = %q, %v\nwant %q", got, err, want)
	}
}

func TestCustomQueryTemplateFields(t *testing.T) {
	req := CustomRequest{
		Series:         "m_total",
		Namespace:      "ns1",
		Resource:       podsGR,
		Names:          []string{"a.1", "b"},
		MetricSelector: mustParse(t, "app in (web,api),tier=front"),
	}
	tests := []struct {
		name, template, want string
	}{
		{name: "Series", template: "<<.Series>>", want: "m_total"},
		{name: "LabelMatchers", template: "<<.LabelMatchers>>",
			want: `app=~"api|web",tier="front",namespace="ns1",pod=~"a\\.1|b"`},
		{name: "LabelValuesByName index", template: `<<index .LabelValuesByName "pod">>;<<index .LabelValuesByName "namespace">>`,
			want: "a.1|b;ns1"},
		{name: "LabelValuesByName range", template: `<<range $k, $v := .LabelValuesByName>><<$k>>=<<$v>>;<<end>>`,
			want: "app=api|web;namespace=ns1;pod=a.1|b;tier=front;"},
		{name: "GroupBy", template: "by (<<.GroupBy>>)", want: "by (pod)"},
		{name: "GroupBySlice", template: `<<range .GroupBySlice>>[<<.>>]<<end>>`, want: "[pod]"},
		{name: "side-position by", template: "sum by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})",
			want: `sum by (pod) (m_total{app=~"api|web",tier="front",namespace="ns1",pod=~"a\\.1|b"})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := podRule(t, tt.template).CustomQuery(req)
			if err != nil || got != tt.want {
				t.Errorf("CustomQuery = %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
}

func TestCustomQuerySelectorOperators(t *testing.T) {
	tests := []struct {
		selector string
		want     string // LabelMatchers before the namespace and resource matchers
	}{
		{selector: "app=web", want: `app="web"`},
		{selector: "app==web", want: `app="web"`},
		{selector: "app!=web", want: `app!="web"`},
		{selector: "app in (web,api)", want: `app=~"api|web"`},
		{selector: "app in (web)", want: `app=~"web"`},
		{selector: "app notin (web,api)", want: `app!~"api|web"`},
		{selector: "app", want: `app!=""`},
		{selector: "!app", want: `app=""`},
		{selector: "b=2,a=1", want: `a="1",b="2"`},
		{selector: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			got, err := podRule(t, "<<.LabelMatchers>>").CustomQuery(CustomRequest{
				Series: "m", Namespace: "ns", Resource: podsGR, Names: []string{"p"},
				MetricSelector: mustParse(t, tt.selector),
			})
			want := strings.TrimPrefix(tt.want+`,namespace="ns",pod="p"`, ",")
			if err != nil || got != want {
				t.Errorf("CustomQuery = %q, %v; want %q", got, err, want)
			}
		})
	}
}

func TestCustomQueryResourceMatcher(t *testing.T) {
	nsRule := rulefile.ResourceMapping{Overrides: map[string]rulefile.GroupResource{
		"kubernetes_namespace": {Resource: "namespace"},
		"kubernetes_pod":       {Resource: "pod"},
	}}
	tests := []struct {
		name      string
		resources rulefile.ResourceMapping
		req       CustomRequest
		want      string
	}{
		{name: "no names selects every object",
			req:  CustomRequest{Series: "m", Namespace: "ns", Resource: podsGR},
			want: `namespace="ns",pod!="" by pod .+`},
		{name: "one name is an equality",
			req:  CustomRequest{Series: "m", Namespace: "ns", Resource: podsGR, Names: []string{"web-0.x"}},
			want: `namespace="ns",pod="web-0.x" by pod web-0.x`},
		{name: "several names are quoted regex alternatives",
			req:  CustomRequest{Series: "m", Namespace: "ns", Resource: podsGR, Names: []string{"a.b", "c+d", "e"}},
			want: `namespace="ns",pod=~"a\\.b|c\\+d|e" by pod a.b|c+d|e`},
		{name: "namespaces resource has no separate namespace matcher",
			req:  CustomRequest{Series: "m", Namespace: "ns", Resource: namespacesGR, Names: []string{"ns"}},
			want: `namespace="ns" by namespace ns`},
		{name: "cluster-scoped resource",
			req:  CustomRequest{Series: "m", Resource: nodesGR, Names: []string{"n1", "n2"}},
			want: `node=~"n1|n2" by node n1|n2`},
		{name: "grouped resource",
			req:  CustomRequest{Series: "m", Namespace: "ns", Resource: deploymentsGR, Names: []string{"d"}},
			want: `namespace="ns",deployment="d" by deployment d`},
		{name: "override labels",
			resources: nsRule,
			req:       CustomRequest{Series: "m", Namespace: "ns", Resource: podsGR, Names: []string{"p"}},
			want:      `kubernetes_namespace="ns",kubernetes_pod="p" by kubernetes_pod p`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.resources
			if res.Template == "" && res.Overrides == nil {
				res.Template = "<<.Resource>>"
			}
			r := mustCompile(t, rulefile.DiscoveryRule{Resources: res,
				MetricsQuery: `<<.LabelMatchers>> by <<.GroupBy>> <<index .LabelValuesByName .GroupBy>>`})
			got, err := r.CustomQuery(tt.req)
			if err != nil || got != tt.want {
				t.Errorf("CustomQuery = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCustomQueryErrors(t *testing.T) {
	longValue := strings.Repeat("v", MaxSelectorLength-len("a="))
	tests := []struct {
		name     string
		template string
		req      CustomRequest
		wantBad  bool   // errors.Is(err, ErrBadSelector)
		wantErr  string // substring
	}{
		{name: "gt", req: CustomRequest{MetricSelector: mustParse(t, "n>5")}, wantBad: true, wantErr: "unsupported operator"},
		{name: "lt", req: CustomRequest{MetricSelector: mustParse(t, "n<5")}, wantBad: true, wantErr: "unsupported operator"},
		{name: "kubernetes label key", req: CustomRequest{MetricSelector: mustParse(t, "app.kubernetes.io/name=web")},
			wantBad: true, wantErr: "not a Prometheus label name"},
		{name: "key with dash", req: CustomRequest{MetricSelector: mustParse(t, "my-app=web")}, wantBad: true},
		{name: "key starting with digit", req: CustomRequest{MetricSelector: mustParse(t, "1app=web")}, wantBad: true},
		{name: "selector selects nothing", req: CustomRequest{MetricSelector: labels.Nothing()}, wantBad: true},
		{name: "selector too long", req: CustomRequest{MetricSelector: labels.SelectorFromValidatedSet(labels.Set{"a": longValue + "x"})},
			wantBad: true, wantErr: "more than 4096"},
		{name: "series not a metric name", req: CustomRequest{Series: `m{a="b"}`}, wantErr: "not a Prometheus metric name"},
		{name: "empty object name", req: CustomRequest{Names: []string{"a", ""}}, wantErr: "empty object name"},
		{name: "unmapped resource", req: CustomRequest{Resource: schema.GroupResource{Resource: "gizmos"}}, wantErr: "no label for gizmos"},
		{name: "empty rendering", template: `<<if false>>x<<end>>  `, wantErr: "empty query"},
		{name: "template execution error", template: `<<.Nope>>`, wantErr: "render metricsQuery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := tt.template
			if tmpl == "" {
				tmpl = goldenTemplate
			}
			req := tt.req
			if req.Series == "" {
				req.Series = "m"
			}
			if req.Resource.Empty() {
				req.Resource = podsGR
			}
			req.Namespace = "ns"
			_, err := podRule(t, tmpl).CustomQuery(req)
			if err == nil || errors.Is(err, ErrBadSelector) != tt.wantBad || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("CustomQuery error = %v; want ErrBadSelector %v, containing %q", err, tt.wantBad, tt.wantErr)
			}
		})
	}
	t.Run("selector at the length limit is accepted", func(t *testing.T) {
		sel := labels.SelectorFromValidatedSet(labels.Set{"a": longValue})
		if n := len(sel.String()); n != MaxSelectorLength {
			t.Fatalf("test selector is %d bytes, want %d", n, MaxSelectorLength)
		}
		if _, err := podRule(t, goldenTemplate).CustomQuery(CustomRequest{Series: "m", Resource: podsGR, MetricSelector: sel}); err != nil {
			t.Errorf("CustomQuery: %v", err)
		}
	})
}

func TestExternalQuery(t *testing.T) {
	const tmpl = `sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)|<<len .GroupBySlice>>|` +
		`<<range $k, $v := .LabelValuesByName>><<$k>>=<<$v>>;<<end>>`
	tests := []struct {
		name      string
		resources rulefile.ResourceMapping
		namespace string
		selector  labels.Selector
		want      string
	}{
		{name: "namespaced with selector", resources: rulefile.ResourceMapping{Template: "<<.Resource>>"},
			namespace: "ns", selector: mustParse(t, "queue in (a,b),env!=dev"),
			want: `sum(q{env!="dev",queue=~"a|b",namespace="ns"}) by ()|0|env=dev;namespace=ns;queue=a|b;`},
		{name: "namespaced, no namespace given", resources: rulefile.ResourceMapping{Template: "<<.Resource>>"},
			selector: mustParse(t, "queue=a"),
			want:     `sum(q{queue="a"}) by ()|0|queue=a;`},
		{name: "namespace label from override", resources: rulefile.ResourceMapping{
			Overrides: map[string]rulefile.GroupResource{"exported_namespace": {Resource: "namespaces"}}},
			namespace: "ns", selector: labels.Everything(),
			want: `sum(q{exported_namespace="ns"}) by ()|0|exported_namespace=ns;`},
		{name: "not namespaced", resources: rulefile.ResourceMapping{Namespaced: boolPtr(false)},
			namespace: "ns", selector: mustParse(t, "queue"),
			want: `sum(q{queue!=""}) by ()|0|queue=;`},
		{name: "nil selector", resources: rulefile.ResourceMapping{Namespaced: boolPtr(false)},
			want: `sum(q{}) by ()|0|`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompileKind(t, rulefile.DiscoveryRule{Resources: tt.resources, MetricsQuery: tmpl}, External)
			got, err := r.ExternalQuery("q", tt.namespace, tt.selector)
			if err != nil || got != tt.want {
				t.Errorf("ExternalQuery = %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
	t.Run("errors", func(t *testing.T) {
		r := mustCompileKind(t, rulefile.DiscoveryRule{Resources: rulefile.ResourceMapping{Template: "<<.Resource>>"}, MetricsQuery: tmpl}, External)
		if _, err := r.ExternalQuery("q", "ns", mustParse(t, "a>1")); !errors.Is(err, ErrBadSelector) {
			t.Errorf("gt: error = %v, want ErrBadSelector", err)
		}
		if _, err := r.ExternalQuery("q", "ns", mustParse(t, "app.kubernetes.io/name=x")); !errors.Is(err, ErrBadSelector) {
			t.Errorf("kubernetes key: error = %v, want ErrBadSelector", err)
		}
		if _, err := r.ExternalQuery("q-x", "ns", nil); err == nil || errors.Is(err, ErrBadSelector) {
			t.Errorf("bad series: error = %v, want a non-selector error", err)
		}
	})
}
