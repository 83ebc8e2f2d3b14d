package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
)

// ParseSeries parses `name{label="value",...}` (the braces are optional). Values are
// double-quoted strings with Go escapes.
func ParseSeries(text string) (Series, error) {
	s := Series{Labels: map[string]string{}}
	text = strings.TrimSpace(text)
	name, rest, hasLabels := strings.Cut(text, "{")
	s.Name = strings.TrimSpace(name)
	if !model.LegacyValidation.IsValidMetricName(s.Name) {
		return s, fmt.Errorf("series %q: invalid metric name %q", text, s.Name)
	}
	if !hasLabels {
		return s, nil
	}
	rest = strings.TrimSpace(rest)
	for {
		rest = strings.TrimLeft(rest, " ,")
		if strings.HasPrefix(rest, "}") {
			if strings.TrimSpace(rest[1:]) != "" {
				return s, fmt.Errorf("series %q: unexpected text after }", text)
			}
			return s, nil
		}
		label, after, ok := strings.Cut(rest, "=")
		if !ok {
			return s, fmt.Errorf("series %q: want label=\"value\"", text)
		}
		label = strings.TrimSpace(label)
		if !model.LegacyValidation.IsValidLabelName(label) {
			return s, fmt.Errorf("series %q: invalid label name %q", text, label)
		}
		value, remaining, err := unquotePrefix(strings.TrimSpace(after))
		if err != nil {
			return s, fmt.Errorf("series %q: label %s: %w", text, label, err)
		}
		s.Labels[label] = value
		rest = remaining
	}
}

// unquotePrefix reads one double-quoted string at the start of s.
func unquotePrefix(s string) (value, rest string, err error) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", fmt.Errorf("value must be double-quoted")
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			v, err := strconv.Unquote(s[:i+1])
			return v, s[i+1:], err
		}
	}
	return "", "", fmt.Errorf("unterminated string")
}
