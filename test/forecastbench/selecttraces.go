package forecastbench

import (
	"fmt"
	"strings"
)

// SelectTraces returns the traces of all that names (comma-separated, as
// EBBFLOW_STUDY_TRACES holds them) selects, all of them when names is
// empty. A name that is no trace's is an error, and so is a selection of
// none: a bench that ran no trace must not pass.
func SelectTraces(all []Trace, names string) ([]Trace, error) {
	if len(all) == 0 {
		return nil, fmt.Errorf("no trace to select from")
	}
	if strings.TrimSpace(names) == "" {
		return all, nil
	}
	byName := map[string]Trace{}
	var known []string
	for _, tr := range all {
		byName[tr.Name] = tr
		known = append(known, tr.Name)
	}
	var out []Trace
	for n := range strings.SplitSeq(names, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		tr, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("EBBFLOW_STUDY_TRACES: %q is no trace's name (the traces: %s)", n, strings.Join(known, ", "))
		}
		out = append(out, tr)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("EBBFLOW_STUDY_TRACES=%q selects no trace", names)
	}
	return out, nil
}
