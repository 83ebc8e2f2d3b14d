package rules

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// seriesFilter keeps series whose name matches re (keep) or does not match it (!keep).
type seriesFilter struct {
	re   *regexp.Regexp
	keep bool
}

// namer turns series names into API metric names.
type namer struct {
	// filters holds the seriesFilters followed by name.matches as an implicit "is".
	filters []seriesFilter
	matches *regexp.Regexp
	as      string
	// shape matches every API name this namer can produce (see nameShape).
	shape *regexp.Regexp
}

// newNamer compiles the seriesFilters and the name mapping of a rule.
func newNamer(filters []rulefile.RegexFilter, name rulefile.NameMapping) (namer, error) {
	var n namer
	for i, f := range filters {
		sf, err := compileFilter(f)
		if err != nil {
			return namer{}, fmt.Errorf("seriesFilters[%d]: %w", i, err)
		}
		n.filters = append(n.filters, sf)
	}
	expr := name.Matches
	if expr == "" {
		expr = ".*"
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return namer{}, fmt.Errorf("name.matches: %w", err)
	}
	n.matches = re
	if name.Matches != "" {
		n.filters = append(n.filters, seriesFilter{re: re, keep: true})
	}
	n.as, err = defaultAs(re, name.As)
	if err != nil {
		return namer{}, err
	}
	n.shape = nameShape(re, n.as)
	return n, nil
}

// compileFilter compiles one seriesFilters entry; exactly one of is and isNot is set.
func compileFilter(f rulefile.RegexFilter) (seriesFilter, error) {
	switch {
	case f.Is != "" && f.IsNot != "":
		return seriesFilter{}, errors.New("both is and isNot are set")
	case f.Is == "" && f.IsNot == "":
		return seriesFilter{}, errors.New("neither is nor isNot is set")
	}
	expr, keep := f.Is, true
	if f.Is == "" {
		expr, keep = f.IsNot, false
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return seriesFilter{}, err
	}
	return seriesFilter{re: re, keep: keep}, nil
}

// defaultAs returns as, or when it is empty "$0" for a regex without capture groups and
// "$1" for one with exactly one; more groups need an explicit as.
func defaultAs(re *regexp.Regexp, as string) (string, error) {
	if as != "" {
		return as, nil
	}
	switch re.NumSubexp() {
	case 0:
		return "$0", nil
	case 1:
		return "$1", nil
	default:
		return "", fmt.Errorf("name.as is required: name.matches %q has %d capture groups", re.String(), re.NumSubexp())
	}
}

// MetricName returns the API metric name for a series name; false when seriesFilters or
// name.matches reject it. It is also false when series is not a Prometheus metric name
// ([a-zA-Z_:][a-zA-Z0-9_:]*, which no template could query safely) or when the
// expansion of name.as is empty.
func (r *Rule) MetricName(series string) (string, bool) {
	return r.namer.metricName(series)
}

func (n namer) metricName(series string) (string, bool) {
	if !metricNameRE.MatchString(series) {
		return "", false
	}
	for _, f := range n.filters {
		if f.re.MatchString(series) != f.keep {
			return "", false
		}
	}
	idx := n.matches.FindStringSubmatchIndex(series)
	if idx == nil {
		return "", false
	}
	name := string(n.matches.ExpandString(nil, n.as, series, idx))
	if name == "" {
		return "", false
	}
	return name, true
}
