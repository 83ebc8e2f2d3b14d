package rulefile

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

func TestLoadFileExample(t *testing.T) {
	cfg, err := LoadFile(filepath.Join("testdata", "example.yaml"))
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	if err := Validate(cfg, DefaultRESTMapper()); err != nil {
		t.Errorf("Validate:\n%v", err)
	}
	if ws := Warnings(cfg, DefaultRESTMapper()); len(ws) > 0 {
		t.Errorf("Warnings:\n%v", LoadErrors(ws))
	}
	if len(cfg.Rules) != 4 || len(cfg.ExternalRules) != 2 || cfg.ResourceRules == nil {
		t.Fatalf("got %d rules, %d external rules, resource rules %v; want 4, 2, set",
			len(cfg.Rules), len(cfg.ExternalRules), cfg.ResourceRules != nil)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"rules[0] filter", cfg.Rules[0].SeriesFilters, []RegexFilter{{IsNot: "^container_.*_seconds_total$"}}},
		{"rules[0] name", cfg.Rules[0].Name, NameMapping{Matches: "^container_(.*)_total$", As: "container_${1}_per_second"}},
		{"rules[2] template", cfg.Rules[2].Resources.Template, "<<.Resource>>"},
		{"rules[3] override", cfg.Rules[3].Resources.Overrides["deployment"], GroupResource{Group: "apps", Resource: "deployment"}},
		{"externalRules[0] namespaced", cfg.ExternalRules[0].Resources.Namespaced, (*bool)(nil)},
		{"externalRules[1] namespaced", *cfg.ExternalRules[1].Resources.Namespaced, false},
		{"window", cfg.ResourceRules.Window, model.Duration(5 * time.Minute)},
		{"memory container label", cfg.ResourceRules.Memory.ContainerLabel, "container"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

// loadErrorLines loads doc and returns its errors, one string each.
func loadErrorLines(t *testing.T, doc string) []string {
	t.Helper()
	cfg, err := Load([]byte(doc))
	if err == nil {
		t.Fatalf("Load succeeded (%+v), want errors", cfg)
	}
	if cfg != nil {
		t.Errorf("Load returned a config with its error")
	}
	var errs LoadErrors
	if !errors.As(err, &errs) || len(errs) == 0 {
		t.Fatalf("error %q is not a non-empty LoadErrors", err)
	}
	if got, want := err.Error(), joinErrors(errs); got != want {
		t.Errorf("Error() = %q, want one problem per line %q", got, want)
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return lines
}

// loadErrorTests are documents Load rejects, with every problem it must report.
var loadErrorTests = []struct {
	name string
	doc  string
	want []string
}{{
	name: "unknown keys at several depths are all reported",
	doc: `rulez: []
rules:
  - seriesQuery: up
    seriesFilter: []
    seriesFilters:
      - is: a
        isnot: b
    resources:
      overide: {}
      overrides:
        pod: {resource: pod, grup: ""}
    metricQuery: x
externalrules: []
resourceRules:
  cpu: {containerQuery: a, extra: 1}
  windows: 5m
`,
	want: []string{
		`line 1:1: rulez: unknown key "rulez" (did you mean "rules"?)`,
		`line 4:5: rules[0].seriesFilter: unknown key "seriesFilter" (did you mean "seriesFilters"?)`,
		`line 7:9: rules[0].seriesFilters[0].isnot: unknown key "isnot" (did you mean "isNot"?)`,
		`line 9:7: rules[0].resources.overide: unknown key "overide" (did you mean "overrides"?)`,
		`line 11:30: rules[0].resources.overrides.pod.grup: unknown key "grup" (did you mean "group"?)`,
		`line 12:5: rules[0].metricQuery: unknown key "metricQuery" (did you mean "metricsQuery"?)`,
		`line 13:1: externalrules: unknown key "externalrules" (did you mean "externalRules"?)`,
		`line 15:28: resourceRules.cpu.extra: unknown key "extra" (known keys: containerQuery, nodeQuery, resources, containerLabel)`,
		`line 16:3: resourceRules.windows: unknown key "windows" (did you mean "window"?)`,
	},
}, {
	name: "wrong types",
	doc: `rules:
  - seriesQuery: [a, b]
    seriesFilters: {is: a}
    resources:
      - template: x
    name: ^foo$
  - resources:
      namespaced: maybe
      overrides: [pod]
externalRules: {}
resourceRules:
  window: 5 minutes
  cpu: cpu
`,
	want: []string{
		`line 2:18: rules[0].seriesQuery: expected a string, found a list`,
		`line 3:20: rules[0].seriesFilters: expected a list, found a mapping`,
		`line 5:7: rules[0].resources: expected a mapping, found a list`,
		`line 6:11: rules[0].name: expected a mapping, found "^foo$"`,
		`line 8:19: rules[1].resources.namespaced: expected true or false, found "maybe"`,
		`line 9:18: rules[1].resources.overrides: expected a mapping, found a list`,
		`line 10:16: externalRules: expected a list, found a mapping`,
		`line 12:11: resourceRules.window: expected a duration such as 5m or 30s, found "5 minutes"`,
		`line 13:8: resourceRules.cpu: expected a mapping, found "cpu"`,
	},
}, {
	name: "top level must be a mapping",
	doc:  "- seriesQuery: up\n",
	want: []string{`line 1:1: expected a mapping, found a list`},
}, {
	name: "duplicate keys",
	doc: `rules:
  - seriesQuery: a
    seriesQuery: b
rules: []
`,
	want: []string{
		`line 3:5: rules[0].seriesQuery: duplicate key "seriesQuery" (first at line 2)`,
		`line 4:1: rules: duplicate key "rules" (first at line 1)`,
	},
}, {
	name: "keys must be strings",
	doc:  "rules:\n  - [a]: b\n    ~: c\n",
	want: []string{
		`line 2:5: rules[0]: expected a string key, found a list`,
		`line 3:5: rules[0]: expected a string key, found null`,
	},
}, {
	name: "odd label names are quoted in paths",
	doc:  "rules:\n  - resources:\n      overrides:\n        \"app.kubernetes.io/name\": {resource: pod, x: 1}\n",
	want: []string{`line 4:51: rules[0].resources.overrides["app.kubernetes.io/name"].x: unknown key "x" (known keys: group, resource)`},
}, {
	name: "syntax error",
	doc:  "rules:\n  - seriesQuery: a\n    metricsQuery: b: c\n",
	want: []string{`line 3: invalid YAML: mapping values are not allowed in this context`},
}, {
	name: "quoted boolean, as prometheus-adapter refuses it",
	doc:  "externalRules:\n- resources: {namespaced: \"false\"}\n",
	want: []string{`line 2:27: externalRules[0].resources.namespaced: expected true or false, found the string "false" (remove the quotes)`},
}, {
	name: "null key of a rule, as prometheus-adapter refuses it",
	doc:  "rules:\n- seriesQuery: a\n  ~: b\n",
	want: []string{`line 3:3: rules[0]: expected a string key, found null`},
}, {
	name: "unknown key in an anchored mapping is reported once",
	doc: `rules:
  - &base
    seriesQuery: a
    metricsQuerry: b
  - *base
  - <<: *base
    seriesQuery: c
`,
	want: []string{`line 4:5: rules[0].metricsQuerry: unknown key "metricsQuerry" (did you mean "metricsQuery"?)`},
}}

func TestLoadErrors(t *testing.T) {
	for _, tt := range loadErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadErrorLines(t, tt.doc)
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestLoadEmpty(t *testing.T) {
	for _, doc := range []string{"", "# only a comment\n", "~\n", "---\n", "rules: []\n---\n"} {
		t.Run(doc, func(t *testing.T) {
			cfg, err := Load([]byte(doc))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if cfg == nil || len(cfg.Rules) != 0 || len(cfg.ExternalRules) != 0 || cfg.ResourceRules != nil {
				t.Errorf("Load = %+v, want an empty Config", cfg)
			}
		})
	}
}

func TestLoadAliasesAndMergeKeys(t *testing.T) {
	doc := `rules:
  - &rate
    seriesQuery: a
    resources: {overrides: &pod {namespace: {resource: namespace}, pod: {resource: pod}}}
    metricsQuery: sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)
  - <<: *rate
    seriesQuery: b
externalRules:
  - seriesQuery: c
    resources: {overrides: *pod}
`
	cfg, err := Load([]byte(doc))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(cfg.Rules) != 2 || len(cfg.ExternalRules) != 1 {
		t.Fatalf("got %d rules and %d external rules, want 2 and 1", len(cfg.Rules), len(cfg.ExternalRules))
	}
	merged := cfg.Rules[1]
	if merged.SeriesQuery != "b" || merged.MetricsQuery != cfg.Rules[0].MetricsQuery ||
		merged.Resources.Overrides["pod"] != (GroupResource{Resource: "pod"}) {
		t.Errorf("merged rule = %+v, want rule 0 with seriesQuery b", merged)
	}
	if got := cfg.ExternalRules[0].Resources.Overrides["namespace"]; got != (GroupResource{Resource: "namespace"}) {
		t.Errorf("aliased override = %+v, want namespace", got)
	}
}

// TestLoadAliasBomb feeds a "billion laughs" of merge keys, whose every level is a valid
// rule: the strict check must stay linear and the decoder must refuse it.
func TestLoadAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("rules:\n  - &a0 {seriesQuery: x}\n")
	for i := 1; i < 40; i++ {
		refs := strings.Repeat("*a"+strconv.Itoa(i-1)+", ", 10)
		b.WriteString("  - &a" + strconv.Itoa(i) + " {<<: [" + strings.TrimSuffix(refs, ", ") + "]}\n")
	}
	start := time.Now()
	_, err := Load([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("Load error = %v, want excessive aliasing", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Load took %v on an alias bomb", d)
	}
}

func TestLoadFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	if _, err := LoadFile(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadFile(missing) = %v, want fs.ErrNotExist", err)
	}
	_, err := LoadFile(filepath.Join("testdata", "unknown-key.yaml"))
	var errs LoadErrors
	if !errors.As(err, &errs) {
		t.Fatalf("LoadFile error %v is not LoadErrors", err)
	}
	if !strings.Contains(err.Error(), "unknown-key.yaml") || !strings.Contains(err.Error(), `unknown key "seriesquery"`) {
		t.Errorf("LoadFile error = %q, want the path and the unknown key", err)
	}
}

func TestConfigShapeFollowsTypes(t *testing.T) {
	rule := configShape.fields["rules"].elem
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"top level", configShape.keys, []string{"rules", "externalRules", "resourceRules"}},
		{"discovery rule", rule.keys, []string{"seriesQuery", "seriesFilters", "resources", "name", "metricsQuery", "nanValues", "backend"}},
		{"resources", rule.fields["resources"].keys, []string{"template", "overrides", "namespaced"}},
		{"resource rules", configShape.fields["resourceRules"].keys, []string{"cpu", "memory", "window", "backend"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Errorf("keys = %v, want %v", tt.got, tt.want)
			}
		})
	}
	if k := configShape.fields["resourceRules"].fields["window"].kind; k != shapeDuration {
		t.Errorf("window kind = %v, want duration", k)
	}
}

// TestBooleanRule checks the one rule for resources.namespaced: unquoted YAML
// booleans (1.2's and 1.1's y/n/yes/no/on/off, as prometheus-adapter reads them) decode to
// their value; anything quoted, and any other word, is an error naming the field.
func TestBooleanRule(t *testing.T) {
	for word, want := range yamlBooleans {
		for _, text := range []string{word, `"` + word + `"`, `'` + word + `'`} {
			cfg, err := Load([]byte("externalRules:\n- seriesQuery: x\n  metricsQuery: x\n  resources:\n    namespaced: " + text + "\n"))
			quoted := text != word
			switch {
			case quoted && err == nil:
				t.Errorf("namespaced: %s accepted; a quoted value is a string", text)
			case quoted && !strings.Contains(err.Error(), "externalRules[0].resources.namespaced: expected true or false, found the string"):
				t.Errorf("namespaced: %s: error %q does not name the field and the rule", text, err)
			case !quoted && err != nil:
				t.Errorf("namespaced: %s: %v", text, err)
			case !quoted && (cfg.ExternalRules[0].Resources.Namespaced == nil || *cfg.ExternalRules[0].Resources.Namespaced != want):
				t.Errorf("namespaced: %s decoded as %v, want %v", text, cfg.ExternalRules[0].Resources.Namespaced, want)
			}
		}
	}
	// gopkg.in/yaml.v2, prometheus-adapter's loader, reads y and n as booleans.
	for word, want := range map[string]bool{"y": true, "Y": true, "n": false, "N": false, "yes": true, "off": false} {
		if got, ok := yamlBooleans[word]; !ok || got != want {
			t.Errorf("%s: boolean %v (known %v), want %v", word, got, ok, want)
		}
	}
	for _, other := range []string{"maybe", "1", "0", "yep", "tRue"} {
		if _, err := Load([]byte("externalRules:\n- resources:\n    namespaced: " + other + "\n")); err == nil {
			t.Errorf("namespaced: %s accepted", other)
		}
	}
}

// TestLoadReadsPastWhatPrometheusAdapterDoes: what gopkg.in/yaml.v2, prometheus-adapter's
// loader, reads past is accepted and becomes a warning with its line.
func TestLoadReadsPastWhatPrometheusAdapterDoes(t *testing.T) {
	tests := []struct {
		name, doc string
		rules     int
		want      []string
	}{
		{"second document", "rules: [{seriesQuery: a, resources: {template: \"<<.Resource>>\"}, metricsQuery: \"sum(<<.Series>>)\"}]\n---\nexternalRules: [{seriesQuery: b}]\n", 1,
			[]string{"line 3:1: only the first YAML document is read (as prometheus-adapter does); what follows is ignored"}},
		{"syntax error after the first document", "rules: [{seriesQuery: a, resources: {template: \"<<.Resource>>\"}, metricsQuery: \"sum(<<.Series>>)\"}]\n---\nrules: [\n", 1,
			[]string{"line 3: only the first YAML document is read (as prometheus-adapter does); what follows is ignored"}},
		{"empty second document", "rules: [{seriesQuery: a, resources: {template: \"<<.Resource>>\"}, metricsQuery: \"sum(<<.Series>>)\"}]\n---\n", 1, nil},
		{"null label of an override", "rules:\n- seriesQuery: a\n  metricsQuery: x\n  resources:\n    overrides:\n      ~: {resource: pod}\n      pod: {resource: pod}\n", 1,
			[]string{"line 6:7: rules[0].resources.overrides: a null key is ignored (prometheus-adapter reads it as an empty label name, which no series carries)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load([]byte(tt.doc))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if len(cfg.Rules) != tt.rules || len(cfg.ExternalRules) != 0 {
				t.Errorf("read %d rules and %d external rules, want %d and 0", len(cfg.Rules), len(cfg.ExternalRules), tt.rules)
			}
			var got []string
			for _, w := range Warnings(cfg, nil) {
				got = append(got, w.Error())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
