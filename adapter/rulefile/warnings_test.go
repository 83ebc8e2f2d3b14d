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
		{"external rule may map nothing when not namespaced", func(c *File) {
			c.ExternalRules[0].Resources = ResourceMapping{Namespaced: ptr(false)}
		}, nil},
		{"namespaced external rule maps no namespace", func(c *File) { c.ExternalRules[0].Resources.Overrides = nil },
			[]string{ext0 + "resources: rule is namespaced but no label maps to namespaces, so every request in a namespace fails; set resources.namespaced: false or map a label to namespaces"}},
		{"namespaced external rule whose namespace label is not a label name", func(c *File) {
			c.ExternalRules[0].Resources = ResourceMapping{Namespaced: ptr(true), Overrides: map[string]GroupResource{"k8s.namespace": {Resource: "namespaces"}}}
		}, []string{
			ext0 + `resources.overrides["k8s.namespace"]: "k8s.namespace" is not a Prometheus label name, so no series carries it; the override is ignored`,
			ext0 + "resources: rule is namespaced but no label maps to namespaces, so every request in a namespace fails; set resources.namespaced: false or map a label to namespaces",
		}},
		{"empty seriesQuery", func(c *File) { c.ExternalRules[0].SeriesQuery = " " }, []string{
			`externalRules[0] (seriesQuery " "): seriesQuery: is empty; Prometheus refuses it, so discovery on the rule's backend fails at every relist and its rules yield no metrics`,
		}},
		{"seriesQuery not a selector", func(c *File) { c.Rules[0].SeriesQuery = "rate(x[5m])" }, []string{
			`rules[0] (seriesQuery "rate(x[5m])"): seriesQuery: is not a series selector (1:5: parse error: unexpected "("); Prometheus refuses it, so discovery on the rule's backend fails at every relist and its rules yield no metrics`,
		}},
		{"as with $1_text reads a group name", func(c *File) { c.Rules[0].Name = NameMapping{Matches: "^(.*)_total$", As: "$1_per_second"} },
			[]string{rule0 + `name.as: refers to capture group "1_per_second", which name.matches does not define, so it expands to nothing; to follow group 1 with text, write ${1}_per_second`}},
		{"as refers to a missing group", func(c *File) { c.Rules[0].Name = NameMapping{Matches: "^(.*)_(total)$", As: "${1}_$3"} },
			[]string{rule0 + "name.as: refers to capture group $3, but name.matches has only 2 capture groups; it expands to nothing"}},
		{"as refers to a group when there is none", func(c *File) { c.Rules[0].Name = NameMapping{As: "q_$1"} },
			[]string{rule0 + "name.as: refers to capture group $1, but name.matches has no capture group; it expands to nothing"}},
		{"as with $name_text reads a longer name", func(c *File) {
			c.Rules[0].Name = NameMapping{Matches: "^(?P<base>.*)_total$", As: "$base_rate"}
		}, []string{rule0 + `name.as: refers to capture group "base_rate", which name.matches does not define, so it expands to nothing`}},
		{"empty metricsQuery", func(c *File) { c.ExternalRules[0].MetricsQuery = "" },
			[]string{ext0 + "metricsQuery: is empty, so every request fails"}},
		{"metricsQuery with {{ }} is plain text, and not PromQL", func(c *File) { c.ExternalRules[0].MetricsQuery = "{{.Series}}" },
			[]string{ext0 + `metricsQuery: renders invalid PromQL on sample arguments, so every request would fail: 1:2: parse error: unexpected left brace '{'; rendered query: {{.Series}}`}},
		{"metricsQuery with an unknown function", func(c *File) { c.Rules[0].MetricsQuery = "summ(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)" },
			[]string{rule0 + `metricsQuery: renders invalid PromQL on sample arguments, so every request would fail: 1:1: parse error: unknown function with name "summ"; rendered query: summ(http_requests_total{namespace="default",pod=~"a|b"}) by (pod)`}},
		{"override label not a label name", func(c *File) {
			c.Rules[0].Resources.Overrides["app.kubernetes.io/name"] = GroupResource{Group: "apps", Resource: "deployment"}
		},
			[]string{rule0 + `resources.overrides["app.kubernetes.io/name"]: "app.kubernetes.io/name" is not a Prometheus label name, so no series carries it; the override is ignored`}},
		{"resource rules present but empty", func(c *File) { c.ResourceRules = &ResourceRules{} }, []string{
			"resourceRules: window: is not greater than zero, so every answer reports a window of 0s; set the range the queries use, e.g. 5m",
			`resourceRules.cpu: containerLabel: "" is not a Prometheus label name, so every pod request fails; set it, e.g. container`,
			"resourceRules.cpu: resources: no label maps to pods, so pod queries will fail; set template or an override",
			"resourceRules.cpu: resources: no label maps to nodes, so node queries will fail; set template or an override",
			"resourceRules.cpu: resources: no label maps to namespaces, so namespace queries will fail; set template or an override",
			"resourceRules.cpu: containerQuery: is empty, so every request fails",
			"resourceRules.cpu: nodeQuery: is empty, so every request fails",
			`resourceRules.memory: containerLabel: "" is not a Prometheus label name, so every pod request fails; set it, e.g. container`,
			"resourceRules.memory: resources: no label maps to pods, so pod queries will fail; set template or an override",
			"resourceRules.memory: resources: no label maps to nodes, so node queries will fail; set template or an override",
			"resourceRules.memory: resources: no label maps to namespaces, so namespace queries will fail; set template or an override",
			"resourceRules.memory: containerQuery: is empty, so every request fails",
			"resourceRules.memory: nodeQuery: is empty, so every request fails",
		}},
		{"resource query not PromQL", func(c *File) { c.ResourceRules.CPU.ContainerQuery = "sum(<<.Series>>" }, []string{
			"resourceRules.cpu: containerQuery: renders invalid PromQL on sample arguments, so every request would fail: 1:24: parse error: unclosed left parenthesis; rendered query: sum(http_requests_total",
		}},
		{"two labels for one resource", func(c *File) {
			c.Rules[0].Resources.Overrides["kubernetes_pod_name"] = GroupResource{Resource: "pods"}
		}, []string{rule0 + `resources.overrides: labels "kubernetes_pod_name" and "pod" both map to pods; which one queries use is arbitrary`}},
		{"metricsQuery with an unknown field", func(c *File) { c.ExternalRules[0].MetricsQuery = "sum(<<.Serie>>)" },
			[]string{ext0 + `metricsQuery: fails on sample arguments, so every request would fail: metricsQuery:1:6: executing "metricsQuery" at <.Serie>: can't evaluate field Serie in type rulefile.queryTemplateArgs`}},
		{"metricsQuery rendering nothing", func(c *File) { c.ExternalRules[0].MetricsQuery = "<<if false>>x<<end>>" },
			[]string{ext0 + "metricsQuery: renders an empty query on sample arguments, so every request would fail"}},
		{"metricsQuery using every field", func(c *File) {
			c.Rules[0].MetricsQuery = `sum by (<<.GroupBy>>,<<range .GroupBySlice>><<.>><<end>>) (<<.Series>>{<<.LabelMatchers>>,x=~"<<index .LabelValuesByName "pod">>"})`
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
