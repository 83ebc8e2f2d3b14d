package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// shown is what the demo showed of what only Ebbflow does: the explain
// outputs (by object name; an error for one that failed) and the dry-run
// Autoscaler's DryRunRescale events as kubectl printed them.
type shown struct {
	explains      map[string]string
	explainErrs   map[string]error
	dryRunEvents  string
	dryRunEvError error
}

// judgeShown fails for anything the demo shows that does not show what it
// says: web-ebbflow's explain must be a scale-up decision on the app's
// metric, the dry-run's a decision it would have written, and the dry-run
// must have recorded at least one "would scale" event.
func judgeShown(s shown) error {
	var errs []error
	errs = append(errs, judgeExplain(s, webEAS, func(from, to int, text string) error {
		if to <= from {
			return fmt.Errorf("shows %d → %d, not the scale-up it was shown for", from, to)
		}
		if !strings.Contains(text, "http_requests_per_second") {
			return errors.New("does not name the metric it decided on (http_requests_per_second)")
		}
		return nil
	}))
	errs = append(errs, judgeExplain(s, dryRun, func(from, to int, text string) error {
		if to == from || !strings.Contains(text, "WouldScale") {
			return fmt.Errorf("shows %d → %d without the WouldScale outcome it was shown for", from, to)
		}
		return nil
	}))
	switch n := len(wouldScaleEvents(s.dryRunEvents)); {
	case s.dryRunEvError != nil:
		errs = append(errs, fmt.Errorf("the dry-run Autoscaler's events: %w", s.dryRunEvError))
	case n == 0:
		errs = append(errs, fmt.Errorf("the dry-run Autoscaler %s recorded no DryRunRescale event (\"would scale from … to …\")", dryRun))
	}
	return errors.Join(errs...)
}

var replicasLine = regexp.MustCompile(`(?m)^Replicas:\s+(\d+) → (\d+)\s*$`)

// judgeExplain checks that name's explain was shown, succeeded, and passes
// check with the replicas it shows.
func judgeExplain(s shown, name string, check func(from, to int, text string) error) error {
	if err := s.explainErrs[name]; err != nil {
		return fmt.Errorf("explain %s failed: %w", name, err)
	}
	text, ok := s.explains[name]
	if !ok {
		return fmt.Errorf("explain %s was never shown: no decision of it to show", name)
	}
	m := replicasLine.FindStringSubmatch(text)
	if m == nil {
		return fmt.Errorf("explain %s shows no \"Replicas: n → m\" line", name)
	}
	from, _ := strconv.Atoi(m[1])
	to, _ := strconv.Atoi(m[2])
	if err := check(from, to, text); err != nil {
		return fmt.Errorf("explain %s %w", name, err)
	}
	return nil
}

// wouldScaleEvents returns the lines of the events' listing that are
// DryRunRescale messages.
func wouldScaleEvents(listing string) []string {
	var out []string
	for line := range strings.Lines(listing) {
		if strings.Contains(line, "would scale from") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// judgeLoad fails when a load generator failed, sent nothing, or more than
// a tenth of what it sent was not answered 2xx.
func judgeLoad(load map[string]loadResult) error {
	var errs []error
	for _, name := range []string{webHPA, webEAS} {
		r, ok := load[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("load on %s: no result", name))
		case r.err != nil:
			errs = append(errs, fmt.Errorf("load on %s: %w", name, r.err))
		case r.Sent == 0:
			errs = append(errs, fmt.Errorf("load on %s: no request sent", name))
		case r.OK < r.Sent*9/10:
			errs = append(errs, fmt.Errorf("load on %s: only %d of %d requests answered 2xx (%d errors)", name, r.OK, r.Sent, r.Errors))
		}
	}
	return errors.Join(errs...)
}

// judgeParity fails when the HPA and the Autoscaler with the same spec
// under the same load peaked more than one replica apart. (Their sequences
// may differ in timing: the controllers sync at different moments.)
func judgeParity(samples []sample) error {
	hpa, eas := judge(samples, webHPA), judge(samples, webEAS)
	if d := hpa.Max - eas.Max; d > 1 || d < -1 {
		return fmt.Errorf("%s (HPA) peaked at %d replicas and %s (ebbflow Autoscaler, same spec and load) at %d: more than one apart", webHPA, hpa.Max, webEAS, eas.Max)
	}
	return nil
}
