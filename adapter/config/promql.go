package config

import (
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
