package rules

import (
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

func TestCheckMetricName(t *testing.T) {
	tests := []struct {
		name   string
		metric string
		ok     bool
	}{
		{"plain", "http_requests_per_second", true},
		{"colons", "job:requests:rate5m", true},
		{"dash and dot from a literal as", "requests-per.second", true},
		{"longest", strings.Repeat("a", MaxMetricNameLength), true},
		{"empty", "", false},
		{"too long", strings.Repeat("a", MaxMetricNameLength+1), false},
		{"one megabyte", strings.Repeat("a", 1<<20), false},
		{"slash", "a/b", false},
		{"space", "a b", false},
		{"newline", "a\nb", false},
		{"quote stays possible", `a"b`, true},
		{"utf-8", "résumé", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckMetricName(tt.metric); (err == nil) != tt.ok {
				t.Errorf("CheckMetricName(%.40q) = %v, want ok=%v", tt.metric, err, tt.ok)
			}
		})
	}
}

func TestCanName(t *testing.T) {
	tests := []struct {
		name    string
		mapping rulefile.NameMapping
		metric  string
		want    bool
	}{
		{"default takes any metric name", rulefile.NameMapping{}, "http_requests_total", true},
		{"default refuses a dash", rulefile.NameMapping{}, "http-requests", false},
		{"suffix literal present", rulefile.NameMapping{Matches: "^(.*)_total$", As: "${1}_per_second"}, "http_requests_per_second", true},
		{"suffix literal missing", rulefile.NameMapping{Matches: "^(.*)_total$", As: "${1}_per_second"}, "http_requests_total", false},
		{"empty as with one group is $1", rulefile.NameMapping{Matches: "^(.*)_total$"}, "http_requests", true},
		{"literal only", rulefile.NameMapping{Matches: "^up$", As: "targets-up"}, "targets-up", true},
		{"literal only, other name", rulefile.NameMapping{Matches: "^up$", As: "targets-up"}, "targets_up", false},
		{"regex metacharacters in as are literal", rulefile.NameMapping{Matches: "^(.*)$", As: "a.b_$1"}, "axb_c", false},
		{"dot literal kept", rulefile.NameMapping{Matches: "^(.*)$", As: "a.b_$1"}, "a.b_c", true},
		{"$1x names a group that does not exist", rulefile.NameMapping{Matches: "^(.*)$", As: "$1x-y"}, "-y", true},
		{"$1x is not $1 then x", rulefile.NameMapping{Matches: "^(.*)$", As: "$1x-y"}, "foox-y", false},
		{"named groups", rulefile.NameMapping{Matches: "^(?P<a>[a-z]+)_(?P<b>[a-z]+)$", As: "${b}-${a}"}, "bar-foo", true},
		{"too long", rulefile.NameMapping{}, strings.Repeat("a", MaxMetricNameLength+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompile(t, rulefile.DiscoveryRule{SeriesQuery: "{}", Name: tt.mapping,
				Resources: rulefile.ResourceMapping{Template: "<<.Resource>>"}, MetricsQuery: "<<.Series>>"})
			if got := r.CanName(tt.metric); got != tt.want {
				t.Errorf("CanName(%q) = %v, want %v", tt.metric, got, tt.want)
			}
		})
	}
}

// FuzzCanName checks that CanName never refuses a name the rule really produces: for
// every series the rule names, CanName of that name is true. A false refusal would
// make on-demand discovery miss a metric.
func FuzzCanName(f *testing.F) {
	f.Add("^(.*)_total$", "${1}_per_second", "http_requests_total")
	f.Add("^(?P<a>[a-z]+)_(?P<b>[a-z]+)$", "${b}-${a}", "foo_bar")
	f.Add("^(.*)$", "$1x_$0", "a:b")
	f.Add("", "", "up")
	f.Add("(a)(b)?", "$2$1$$", "ab")
	f.Fuzz(func(t *testing.T, matches, as, series string) {
		r, err := Compile(rulefile.DiscoveryRule{SeriesQuery: "{}", Name: rulefile.NameMapping{Matches: matches, As: as},
			Resources: rulefile.ResourceMapping{Template: "<<.Resource>>"}, MetricsQuery: "<<.Series>>"}, 0, Custom, testMapper())
		if err != nil {
			return
		}
		name, ok := r.MetricName(series)
		if !ok || CheckMetricName(name) != nil {
			return
		}
		if !r.CanName(name) {
			t.Errorf("matches %q as %q: series %q is named %q, but CanName refuses it", matches, as, series, name)
		}
	})
}
