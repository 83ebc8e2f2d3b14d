package rulefile

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func podRule() DiscoveryRule {
	return DiscoveryRule{
		SeriesQuery: `{__name__=~"^http_.*",namespace!="",pod!=""}`,
		Resources: ResourceMapping{Overrides: map[string]GroupResource{
			"namespace": {Resource: "namespace"},
			"pod":       {Resource: "pod"},
		}},
		Name:         NameMapping{Matches: "^(.*)_total$", As: "${1}_per_second"},
		MetricsQuery: "sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)",
	}
}

func queueRule() DiscoveryRule {
	return DiscoveryRule{
		SeriesQuery:  "queue_messages_ready",
		Resources:    ResourceMapping{Namespaced: ptr(false)},
		MetricsQuery: "sum(<<.Series>>{<<.LabelMatchers>>})",
	}
}

func resourceRule() ResourceRule {
	return ResourceRule{
		ContainerQuery: "sum by (<<.GroupBy>>) (irate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[4m]))",
		NodeQuery:      "sum by (<<.GroupBy>>) (irate(node_cpu_seconds_total{<<.LabelMatchers>>}[4m]))",
		Resources:      ResourceMapping{Template: "<<.Resource>>"},
		ContainerLabel: "container",
	}
}

func validConfig() *File {
	return &File{
		Rules:         []DiscoveryRule{podRule()},
		ExternalRules: []DiscoveryRule{queueRule(), queueRule()},
		ResourceRules: &ResourceRules{CPU: resourceRule(), Memory: resourceRule(), Window: model.Duration(5 * time.Minute)},
	}
}

func ptr[T any](v T) *T { return &v }

// validationErrorLines validates cfg and returns its errors, one string each.
func validationErrorLines(t *testing.T, cfg *File, mapper meta.RESTMapper) []string {
	t.Helper()
	err := Validate(cfg, mapper)
	if err == nil {
		return nil
	}
	var errs ValidationErrors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("error %q is not a non-empty ValidationErrors", err)
	}
	var first FieldError
	if !errors.As(err, &first) || first != errs[0] {
		t.Errorf("errors.As(FieldError) = %+v, want the first problem %+v", first, errs[0])
	}
	if got := strings.Split(err.Error(), "\n"); len(got) != len(errs) {
		t.Errorf("Error() has %d lines, want one per problem (%d)", len(got), len(errs))
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return lines
}

const (
	ext1  = `externalRules[1] (seriesQuery "queue_messages_ready"): `
	rule0 = `rules[0] (seriesQuery "{__name__=~\"^http_.*\",namespace!=\"\",pod!=\"\"}"): `
)

// validateTests change validConfig() and list every problem Validate must report.
var validateTests = []struct {
	name   string
	modify func(*File)
	want   []string
}{
	{"valid", func(*File) {}, nil},
	{"empty config", func(c *File) { *c = File{} }, nil},
	{"filter with both is and isNot", func(c *File) {
		c.ExternalRules[1].SeriesFilters = []RegexFilter{{Is: "a"}, {Is: "a", IsNot: "b"}}
	}, []string{ext1 + `seriesFilters[1]: set exactly one of is and isNot, not both`}},
	{"filter with neither", func(c *File) { c.ExternalRules[1].SeriesFilters = []RegexFilter{{}} },
		[]string{ext1 + `seriesFilters[0]: set exactly one of is and isNot`}},
	{"filter regex does not compile", func(c *File) { c.ExternalRules[1].SeriesFilters = []RegexFilter{{IsNot: "(a"}} },
		[]string{ext1 + "seriesFilters[0].isNot: invalid regular expression: error parsing regexp: missing closing ): `(a`"}},
	{"filter regex is RE2", func(c *File) { c.ExternalRules[1].SeriesFilters = []RegexFilter{{Is: "a(?=b)"}} },
		[]string{ext1 + "seriesFilters[0].is: invalid regular expression: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"}},
	{"name.matches does not compile", func(c *File) { c.ExternalRules[1].Name.Matches = "[" },
		[]string{ext1 + "name.matches: invalid regular expression: error parsing regexp: missing closing ]: `[`"}},
	{"empty as with one group is fine", func(c *File) { c.ExternalRules[1].Name = NameMapping{Matches: "^(.*)_ready$"} }, nil},
	{"empty as with two groups", func(c *File) { c.ExternalRules[1].Name = NameMapping{Matches: "^(.*)_(ready)$"} },
		[]string{ext1 + "name.as: must be set: name.matches has 2 capture groups, and an empty as only means $0 (no group) or $1 (one group)"}},
	{"as with named groups and dollars", func(c *File) {
		c.ExternalRules[1].Name = NameMapping{Matches: "^(?P<base>.*)_(ready)$", As: "${base}_${2}_$$1_$ x"}
	}, nil},
	{"template does not parse", func(c *File) { c.Rules[0].Resources.Template = "<<.Resource" },
		[]string{rule0 + `resources.template: invalid template: resources.template:1: unclosed action`}},
	{"template without .Resource", func(c *File) { c.Rules[0].Resources.Template = "kube_<<.Group>>" },
		[]string{rule0 + `resources.template: must use <<.Resource>>, e.g. "<<.Resource>>" or "kube_<<.Group>>_<<.Resource>>"`}},
	{"template using .Resource only where it never runs", func(c *File) { c.Rules[0].Resources.Template = "<<if false>><<.Resource>><<end>>x" },
		[]string{rule0 + `resources.template: must use <<.Resource>>, e.g. "<<.Resource>>" or "kube_<<.Group>>_<<.Resource>>"`}},
	{"template fails", func(c *File) { c.Rules[0].Resources.Template = "<<.Resource>><<.Kind>>" },
		[]string{rule0 + `resources.template: template fails: resources.template:1:15: executing "resources.template" at <.Kind>: can't evaluate field Kind in type schema.GroupResource`}},
	{"template gives a bad label pattern", func(c *File) { c.Rules[0].Resources.Template = "(<<.Resource>>" },
		[]string{rule0 + "resources.template: the label pattern this template gives is not a valid regular expression: error parsing regexp: missing closing ): `^((.+?)$`"}},
	{"template may call methods of the group-resource", func(c *File) { c.Rules[0].Resources.Template = "<<.Resource>><<if .Empty>>x<<end>>" }, nil},
	{"unknown override resource", func(c *File) {
		c.Rules[0].Resources.Overrides["microservice"] = GroupResource{Group: "apps", Resource: "deploymnt"}
	}, []string{rule0 + `resources.overrides.microservice: unknown resource "deploymnt" in group "apps"`}},
	{"core group spelled out", func(c *File) { c.Rules[0].Resources.Overrides["pod"] = GroupResource{Group: "core", Resource: "pod"} },
		[]string{rule0 + `resources.overrides.pod: unknown resource "pod" in group "core" (the core group is written as "" or left out)`}},
	{"override without resource", func(c *File) { c.Rules[0].Resources.Overrides["pod"] = GroupResource{Group: "apps"} },
		[]string{rule0 + `resources.overrides.pod.resource: must not be empty`}},
	{"override resource forms", func(c *File) {
		c.Rules[0].Resources.Overrides = map[string]GroupResource{
			"a": {Resource: "pods"}, "b": {Resource: "Pod"}, "c": {Resource: "deployment"},
			"d": {Group: "apps", Resource: "deployments"}, "e": {Resource: "nodes"},
		}
	}, nil},
	{"metricsQuery does not parse", func(c *File) { c.ExternalRules[1].MetricsQuery = "sum(<<.Series>>{<<.LabelMatchers}>>)" },
		[]string{ext1 + `metricsQuery: invalid template: metricsQuery:1: bad character U+007D '}'`}},
	{"external metricsQuery with an empty by is PromQL", func(c *File) {
		c.ExternalRules[1].MetricsQuery = "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
	}, nil},

	{"external rule maps namespaces through an override", func(c *File) {
		c.ExternalRules[1].Resources = ResourceMapping{Overrides: map[string]GroupResource{"kube_namespace": {Resource: "Namespace"}}}
	}, nil},
	{"external rule maps namespaces through a template", func(c *File) {
		c.ExternalRules[1].Resources = ResourceMapping{Template: "<<.Resource>>", Namespaced: ptr(true)}
	}, nil},
	{"custom rule needs no namespace label", func(c *File) { c.Rules[0].Resources.Overrides = map[string]GroupResource{"node": {Resource: "node"}} }, nil},
	{"resource rules", func(c *File) {
		c.ResourceRules.Window = 0
		c.ResourceRules.CPU.ContainerQuery = ""
		c.ResourceRules.CPU.NodeQuery = "<<"
		c.ResourceRules.Memory.ContainerLabel = ""
		c.ResourceRules.Memory.Resources = ResourceMapping{Template: "<<.Group>>", Overrides: map[string]GroupResource{"n": {Resource: "nods"}}}
	}, []string{
		`resourceRules.cpu: nodeQuery: invalid template: nodeQuery:1: unclosed action`,
		`resourceRules.memory: resources.template: must use <<.Resource>>, e.g. "<<.Resource>>" or "kube_<<.Group>>_<<.Resource>>"`,
		`resourceRules.memory: resources.overrides.n: unknown resource "nods"`,
	}},
	{"resource rules present but empty", func(c *File) { c.ResourceRules = &ResourceRules{} }, nil},
	{"resource query does not parse", func(c *File) { c.ResourceRules.Memory.ContainerQuery = "<<end>>" },
		[]string{`resourceRules.memory: containerQuery: invalid template: containerQuery:1: unexpected {{end}}`}},
}

func TestValidate(t *testing.T) {
	mapper := DefaultRESTMapper()
	for _, tt := range validateTests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validConfig()
			tt.modify(cfg)
			got := validationErrorLines(t, cfg, mapper)
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := &File{
		Rules: []DiscoveryRule{
			podRule(),
			{SeriesFilters: []RegexFilter{{Is: "a", IsNot: "b"}}, Name: NameMapping{Matches: "(a)(b)"}},
		},
		ExternalRules: []DiscoveryRule{queueRule()},
		ResourceRules: &ResourceRules{CPU: resourceRule(), Memory: resourceRule()},
	}
	cfg.ExternalRules[0].Resources.Namespaced = nil
	cfg.Rules[0].MetricsQuery = "<<.Series"
	cfg.ResourceRules.CPU.Resources.Overrides = map[string]GroupResource{"pod": {Resource: "pods", Group: "apps"}}
	want := []string{
		`rules[0] (seriesQuery "{__name__=~\"^http_.*\",namespace!=\"\",pod!=\"\"}"): metricsQuery: invalid template: metricsQuery:1: unclosed action`,
		`rules[1] (seriesQuery ""): seriesFilters[0]: set exactly one of is and isNot, not both`,
		`rules[1] (seriesQuery ""): name.as: must be set: name.matches has 2 capture groups, and an empty as only means $0 (no group) or $1 (one group)`,
		`resourceRules.cpu: resources.overrides.pod: unknown resource "pods" in group "apps"`,
	}
	got := validationErrorLines(t, cfg, nil) // nil: the default mapper
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestValidateNilConfig(t *testing.T) {
	var errs ValidationErrors
	if err := Validate(nil, nil); !errors.As(err, &errs) || err.Error() != "config is nil" {
		t.Errorf("Validate(nil) = %v, want ValidationErrors \"config is nil\"", err)
	}
}

func TestDescribe(t *testing.T) {
	r := DiscoveryRule{SeriesQuery: `{__name__=~"^http_.*"}`}
	if got, want := r.Describe("rules", 3), `rules[3] (seriesQuery "{__name__=~\"^http_.*\"}")`; got != want {
		t.Errorf("Describe = %s, want %s", got, want)
	}
}

func TestNormalize(t *testing.T) {
	mapper := DefaultRESTMapper()
	tests := []struct {
		in      GroupResource
		want    schema.GroupResource
		wantErr bool
	}{
		{GroupResource{Resource: "pod"}, schema.GroupResource{Resource: "pods"}, false},
		{GroupResource{Resource: "pods"}, schema.GroupResource{Resource: "pods"}, false},
		{GroupResource{Resource: "Pod"}, schema.GroupResource{Resource: "pods"}, false},
		{GroupResource{Resource: "deployment"}, schema.GroupResource{Group: "apps", Resource: "deployments"}, false},
		{GroupResource{Group: "apps", Resource: "deployment"}, schema.GroupResource{Group: "apps", Resource: "deployments"}, false},
		{GroupResource{Resource: "events"}, schema.GroupResource{Resource: "events"}, false},
		{GroupResource{Group: "events.k8s.io", Resource: "event"}, schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, false},
		{GroupResource{Group: "apps", Resource: "pods"}, schema.GroupResource{}, true},
		{GroupResource{Resource: "widgets"}, schema.GroupResource{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in.Group+"/"+tt.in.Resource, func(t *testing.T) {
			got, err := tt.in.Normalize(mapper)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("Normalize = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
			if err != nil && !meta.IsNoMatchError(err) {
				t.Errorf("error %v does not wrap the mapper's no-match error", err)
			}
		})
	}
}
