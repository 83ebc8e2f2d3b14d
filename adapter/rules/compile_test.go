package rules

import (
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

func TestCompileErrors(t *testing.T) {
	base := func(mod func(*rulefile.DiscoveryRule)) rulefile.DiscoveryRule {
		r := rulefile.DiscoveryRule{
			SeriesQuery:  `{__name__=~"^container_.*"}`,
			Resources:    rulefile.ResourceMapping{Template: "<<.Resource>>"},
			MetricsQuery: "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
		}
		mod(&r)
		return r
	}
	tests := []struct {
		name    string
		rule    rulefile.DiscoveryRule
		kind    Kind
		wantErr string
	}{
		{name: "filter with is and isNot", rule: base(func(r *rulefile.DiscoveryRule) {
			r.SeriesFilters = []rulefile.RegexFilter{{Is: "a", IsNot: "b"}}
		}), wantErr: "seriesFilters[0]: both is and isNot"},
		{name: "filter with neither", rule: base(func(r *rulefile.DiscoveryRule) {
			r.SeriesFilters = []rulefile.RegexFilter{{Is: "a"}, {}}
		}), wantErr: "seriesFilters[1]: neither"},
		{name: "filter bad regex", rule: base(func(r *rulefile.DiscoveryRule) {
			r.SeriesFilters = []rulefile.RegexFilter{{IsNot: "("}}
		}), wantErr: "seriesFilters[0]"},
		{name: "bad name.matches", rule: base(func(r *rulefile.DiscoveryRule) { r.Name.Matches = "[" }),
			wantErr: "name.matches"},
		{name: "as required with two groups", rule: base(func(r *rulefile.DiscoveryRule) { r.Name.Matches = "(a)(b)" }),
			wantErr: "name.as is required"},
		{name: "bad resources template", rule: base(func(r *rulefile.DiscoveryRule) { r.Resources.Template = "<<.Resource" }),
			wantErr: "resources.template"},
		{name: "template without resource", rule: base(func(r *rulefile.DiscoveryRule) { r.Resources.Template = "kube_<<.Group>>" }),
			wantErr: "must use <<.Resource>>"},
		{name: "override of unknown resource", rule: base(func(r *rulefile.DiscoveryRule) {
			r.Resources.Overrides = map[string]rulefile.GroupResource{"thing": {Resource: "gizmo"}}
		}), wantErr: "resources.overrides[thing]"},
		{name: "override of resource in wrong group", rule: base(func(r *rulefile.DiscoveryRule) {
			r.Resources.Overrides = map[string]rulefile.GroupResource{"pod": {Group: "apps", Resource: "pod"}}
		}), wantErr: "resources.overrides[pod]"},
		{name: "bad metricsQuery", rule: base(func(r *rulefile.DiscoveryRule) { r.MetricsQuery = "<<.Series" }),
			wantErr: "metricsQuery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.rule, 0, tt.kind, testMapper())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Compile error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	t.Run("nil mapper", func(t *testing.T) {
		if _, err := Compile(base(func(*rulefile.DiscoveryRule) {}), 0, Custom, nil); err == nil {
			t.Fatal("Compile with nil mapper succeeded")
		}
	})
}

func TestCompileAccessors(t *testing.T) {
	tests := []struct {
		name           string
		kind           Kind
		resources      rulefile.ResourceMapping
		wantNamespaced bool
	}{
		{name: "custom default", kind: Custom, resources: rulefile.ResourceMapping{Template: "<<.Resource>>"}, wantNamespaced: true},
		{name: "external namespaced", kind: External,
			resources: rulefile.ResourceMapping{Overrides: map[string]rulefile.GroupResource{"ns": {Resource: "namespace"}}}, wantNamespaced: true},
		{name: "external not namespaced, no labels needed", kind: External,
			resources: rulefile.ResourceMapping{Namespaced: boolPtr(false)}, wantNamespaced: false},
		{name: "external explicitly namespaced", kind: External,
			resources: rulefile.ResourceMapping{Template: "<<.Resource>>", Namespaced: boolPtr(true)}, wantNamespaced: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := rulefile.DiscoveryRule{SeriesQuery: `{__name__="x"}`, Resources: tt.resources, MetricsQuery: "<<.Series>>"}
			r, err := Compile(rule, 7, tt.kind, testMapper())
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if r.Index() != 7 || r.Kind() != tt.kind || r.SeriesQuery() != `{__name__="x"}` {
				t.Errorf("Index, Kind, SeriesQuery = %d, %v, %q", r.Index(), r.Kind(), r.SeriesQuery())
			}
			if r.ExternalNamespaced() != tt.wantNamespaced {
				t.Errorf("ExternalNamespaced() = %v, want %v", r.ExternalNamespaced(), tt.wantNamespaced)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Custom: "custom", External: "external", Kind(5): "Kind(5)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}
