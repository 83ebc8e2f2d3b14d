package rulefile

import (
	"slices"
	"strings"
	"testing"
)

func TestWarnings(t *testing.T) {
	const ext0 = `externalRules[0] (seriesQuery "queue_messages_ready"): `
	tests := []struct {
		name   string
		modify func(*File)
		want   []string
	}{
		{"none", func(*File) {}, nil},
		{"namespaced on a custom rule", func(c *File) { c.Rules[0].Resources.Namespaced = ptr(false) },
			[]string{rule0 + "resources.namespaced: has no effect on rules (custom metrics), only on externalRules; it is ignored"}},
		{"custom rule maps nothing", func(c *File) { c.Rules[0].Resources = ResourceMapping{} },
			[]string{rule0 + "resources: maps no label to a resource, so the rule yields no metrics; set template or overrides"}},
		{"external rule may map nothing", func(c *File) { c.ExternalRules[0].Resources.Overrides = nil }, nil},
		{"two labels for one resource", func(c *File) {
			c.Rules[0].Resources.Overrides["kubernetes_pod_name"] = GroupResource{Resource: "pods"}
		}, []string{rule0 + `resources.overrides: labels "kubernetes_pod_name" and "pod" both map to pods; which one queries use is arbitrary`}},
		{"metricsQuery with an unknown field", func(c *File) { c.ExternalRules[0].MetricsQuery = "sum(<<.Serie>>)" },
			[]string{ext0 + `metricsQuery: fails on sample arguments, so every request would fail: metricsQuery:1:6: executing "metricsQuery" at <.Serie>: can't evaluate field Serie in type rulefile.queryTemplateArgs`}},
		{"metricsQuery rendering nothing", func(c *File) { c.ExternalRules[0].MetricsQuery = "<<if false>>x<<end>>" },
			[]string{ext0 + "metricsQuery: renders an empty query on sample arguments, so every request would fail"}},
		{"metricsQuery using every field", func(c *File) {
			c.Rules[0].MetricsQuery = `<<.Series>>{<<.LabelMatchers>>,x=~"<<index .LabelValuesByName "pod">>"} by (<<.GroupBy>>,<<range .GroupBySlice>><<.>><<end>>)`
		}, nil},
		{"unbounded range is not tried", func(c *File) { c.Rules[0].MetricsQuery = "<<range 1000000000000>><<end>>" }, nil},
		{"invalid templates are Validate's", func(c *File) { c.Rules[0].MetricsQuery = "<<" }, nil},
		{"resource rules without pods or nodes", func(c *File) {
			c.ResourceRules.Memory.Resources = ResourceMapping{Overrides: map[string]GroupResource{"namespace": {Resource: "namespace"}}}
			c.ResourceRules.CPU.NodeQuery = "<<.Node>>"
		}, []string{
			`resourceRules.cpu: nodeQuery: fails on sample arguments, so every request would fail: nodeQuery:1:2: executing "nodeQuery" at <.Node>: can't evaluate field Node in type rulefile.queryTemplateArgs`,
			`resourceRules.memory: resources: no label maps to pods, so pod queries will fail; set template or an override`,
			`resourceRules.memory: resources: no label maps to nodes, so node queries will fail; set template or an override`,
		}},
	}
	mapper := DefaultRESTMapper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig()
			cfg.ExternalRules = cfg.ExternalRules[:1]
			cfg.ExternalRules[0].Resources = ResourceMapping{Overrides: map[string]GroupResource{"namespace": {Resource: "namespace"}}}
			tt.modify(cfg)
			ws := Warnings(cfg, mapper)
			got := make([]string, len(ws))
			for i, w := range ws {
				got[i] = w.Error()
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestWarningsNil(t *testing.T) {
	if ws := Warnings(nil, nil); ws != nil {
		t.Errorf("Warnings(nil) = %v, want nil", ws)
	}
}

func TestTryExecuteBoundsOutput(t *testing.T) {
	tmpl, err := parseTemplate("q", `<<range .GroupBySlice>><<printf "%999999d" 1>><<end>>`)
	if err != nil {
		t.Fatal(err)
	}
	args := sampleQueryArgs()
	args.GroupBySlice = []string{"a", "b"}
	if _, ran, err := tryExecute(tmpl, args); !ran || err == nil || !strings.Contains(err.Error(), errTrialOutputTooLong.Error()) {
		t.Errorf("tryExecute = ran %v, error %v; want ran with %v", ran, err, errTrialOutputTooLong)
	}
}
