package rules

import (
	"testing"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

func TestMetricName(t *testing.T) {
	tests := []struct {
		name    string
		filters []rulefile.RegexFilter
		mapping rulefile.NameMapping
		series  string
		want    string
		wantOK  bool
	}{
		{name: "defaults keep the series name", series: "http_requests_total", want: "http_requests_total", wantOK: true},
		{name: "matches without group and empty as gives $0", mapping: rulefile.NameMapping{Matches: "requests"},
			series: "http_requests_total", want: "requests", wantOK: true},
		{name: "matches with one group and empty as gives $1", mapping: rulefile.NameMapping{Matches: "^(.*)_total$"},
			series: "http_requests_total", want: "http_requests", wantOK: true},
		{name: "as with braces", mapping: rulefile.NameMapping{Matches: "^(.*)_total$", As: "${1}_per_second"},
			series: "http_requests_total", want: "http_requests_per_second", wantOK: true},
		{name: "as with $1 and literal text", mapping: rulefile.NameMapping{Matches: "^container_(.*)_seconds_total$", As: "$1"},
			series: "container_cpu_usage_seconds_total", want: "cpu_usage", wantOK: true},
		{name: "named groups", mapping: rulefile.NameMapping{Matches: "^(?P<a>[a-z]+)_(?P<b>[a-z]+)$", As: "${b}_${a}"},
			series: "foo_bar", want: "bar_foo", wantOK: true},
		{name: "matches is an implicit is filter", mapping: rulefile.NameMapping{Matches: "^(.*)_total$"},
			series: "http_requests", wantOK: false},
		{name: "is filter keeps", filters: []rulefile.RegexFilter{{Is: "^http_"}},
			series: "http_requests_total", want: "http_requests_total", wantOK: true},
		{name: "is filter drops", filters: []rulefile.RegexFilter{{Is: "^http_"}},
			series: "grpc_requests_total", wantOK: false},
		{name: "isNot filter drops", filters: []rulefile.RegexFilter{{IsNot: "_seconds_total$"}},
			series: "container_cpu_usage_seconds_total", wantOK: false},
		{name: "filters are unanchored", filters: []rulefile.RegexFilter{{Is: "requests"}},
			series: "http_requests_total", want: "http_requests_total", wantOK: true},
		{name: "all filters must hold", filters: []rulefile.RegexFilter{{Is: "^http_"}, {IsNot: "_total$"}},
			series: "http_requests_total", wantOK: false},
		{name: "all filters hold", filters: []rulefile.RegexFilter{{Is: "^http_"}, {IsNot: "_bucket$"}},
			series: "http_requests_total", want: "http_requests_total", wantOK: true},
		{name: "expansion to empty is rejected", mapping: rulefile.NameMapping{Matches: "^(x?)http", As: "$1"},
			series: "http_requests_total", wantOK: false},
		{name: "not a metric name", series: `a{b="c"}`, wantOK: false},
		{name: "empty series", series: "", wantOK: false},
		{name: "colons allowed", series: "job:http_requests:rate5m", want: "job:http_requests:rate5m", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompile(t, rulefile.DiscoveryRule{
				SeriesQuery:   "{}",
				SeriesFilters: tt.filters,
				Name:          tt.mapping,
				Resources:     rulefile.ResourceMapping{Template: "<<.Resource>>"},
				MetricsQuery:  "<<.Series>>",
			})
			got, ok := r.MetricName(tt.series)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("MetricName(%q) = %q, %v; want %q, %v", tt.series, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
