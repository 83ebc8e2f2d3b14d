package rulefile

import (
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// promqlParser is Prometheus' own PromQL parser with every optional syntax switched
// on: a query some Prometheus accepts is not reported as invalid.
var promqlParser = parser.NewParser(parser.Options{
	EnableExperimentalFunctions:  true,
	ExperimentalDurationExpr:     true,
	EnableExtendedRangeSelectors: true,
	EnableBinopFillModifiers:     true,
})

// ParsePromQL parses a rendered query with Prometheus' parser. Errors carry the
// position in query as line:column.
func ParsePromQL(query string) (parser.Expr, error) {
	return promqlParser.ParseExpr(query)
}

// ParseSeriesSelector parses a seriesQuery (a series selector such as
// `{__name__=~"^http_.*",pod!=""}` or `up{job="x"}`) with Prometheus' parser into
// its label matchers, the metric name as a __name__ matcher.
func ParseSeriesSelector(selector string) ([]*labels.Matcher, error) {
	return promqlParser.ParseMetricSelector(selector)
}
