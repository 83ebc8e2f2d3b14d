package main

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// hpaSpecs is the number of specs hpaFocus selects in v1.37.2.
const hpaSpecs = 34

// expectation is what a run's focus must have run.
type expectation struct {
	// patterns: each must match the name of a spec that ran (the fast
	// subset's fastFocus), so a spec renamed upstream fails the run instead
	// of dropping out of it.
	patterns []string
	// count: exactly this many specs ran (the whole selection); 0: at least
	// one.
	count int
}

// expectationFor is the expectation of o's focus: the fast subset's
// patterns, the whole selection's count, or at least one spec for a focus or
// skip of the caller's.
func expectationFor(o options) expectation {
	switch {
	case o.fast && o.skip == "":
		return expectation{patterns: fastFocus}
	case o.focus == hpaFocus && o.skip == "":
		return expectation{count: hpaSpecs}
	}
	return expectation{}
}

// verdict is nil only when the drop-in run (if any) ran every spec the focus
// wants and each passed, with e2e.test's exit code agreeing, or when each
// spec that did not pass failed against kube-controller-manager too with the
// same failure (the kcm run is on a cluster of its own). Skipped, timed-out
// and interrupted specs fail the verdict. A run without a drop-in mode (kcm
// alone) is held to the same rules of its own.
func (r report) verdict() error {
	var eb, kcm *modeRun
	for i := range r.runs {
		switch r.runs[i].mode {
		case modeEbbflow:
			eb = &r.runs[i]
		case modeKCM:
			kcm = &r.runs[i]
		}
	}
	if eb == nil && kcm != nil {
		return runVerdict(*kcm, r.want, nil)
	}
	if eb == nil {
		return fmt.Errorf("no run to judge")
	}
	return runVerdict(*eb, r.want, kcm)
}

// runVerdict judges run m against want, excusing a failure only by the same
// failure of the same spec in base (nil: nothing excused).
func runVerdict(m modeRun, want expectation, base *modeRun) error {
	if len(m.cases) == 0 {
		return fmt.Errorf("mode %s: e2e.test ran no spec (exit %d): see %s/e2e.log", m.mode, m.exit, m.dir)
	}
	var errs []string
	specs := 0
	for _, c := range m.cases {
		if c.spec {
			specs++
		}
	}
	if want.count > 0 && specs != want.count {
		errs = append(errs, fmt.Sprintf("%d specs ran, the focus selects %d (renamed, added or removed upstream?)", specs, want.count))
	}
	for _, p := range want.patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("focus pattern %q: %w", p, err)
		}
		if !ranMatching(m.cases, re) {
			errs = append(errs, fmt.Sprintf("no spec that ran matches the focus pattern %q (renamed upstream?)", p))
		}
	}
	var baseCases map[string]testCase
	if base != nil {
		if len(base.cases) == 0 {
			errs = append(errs, fmt.Sprintf("mode %s ran no spec (exit %d): no failure can be excused by it", base.mode, base.exit))
		}
		baseCases = map[string]testCase{}
		for _, c := range base.cases {
			baseCases[c.Name] = c
		}
	}
	notPassed := 0
	for _, c := range m.cases {
		if c.Status == "passed" {
			continue
		}
		notPassed++
		if b, ok := baseCases[c.Name]; ok && sameFailure(c, b) {
			continue // fails against kube-controller-manager on its own cluster alike: the environment
		}
		why := c.Status
		if c.Message != "" {
			why += ": " + c.Message
		}
		errs = append(errs, fmt.Sprintf("%s %s (%s)", m.mode, shortName(c.Name), why))
	}
	switch {
	case m.exit != 0 && notPassed == 0:
		errs = append(errs, fmt.Sprintf("mode %s: e2e.test exited %d with every spec of its report passed: see %s/e2e.log", m.mode, m.exit, m.dir))
	case m.exit == 0 && notPassed > 0:
		errs = append(errs, fmt.Sprintf("mode %s: e2e.test exited 0 with %d specs not passed in its report", m.mode, notPassed))
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("mode %s fails: %s", m.mode, strings.Join(errs, "; "))
	}
	return nil
}

func ranMatching(cases []testCase, re *regexp.Regexp) bool {
	for _, c := range cases {
		if c.spec && c.Status != "skipped" && re.MatchString(c.Name) {
			return true
		}
	}
	return false
}

// excusable are the statuses a failure of the baseline can excuse: a spec
// that ran to a failed assertion or a panic. A skip, a timeout or an
// interruption says the spec did not run to its end, in either mode.
var excusable = map[string]bool{"failed": true, "panicked": true}

// volatileText are the parts of a failure message that differ between two
// runs of the same failure: times of day, the test namespace's number and
// the random suffixes of generated names.
var volatileText = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{2}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?`), "<time>"},
	{regexp.MustCompile(`\b(horizontal-pod-autoscaling|hpa)[a-z-]*-\d+\b`), "<namespace>"},
	{regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2456789]{5}\b`), "-<rand>"},
}

// sameFailure: both specs failed the same way — an excusable status, the
// same in both, and the same message but for volatileText.
func sameFailure(a, b testCase) bool {
	if !excusable[a.Status] || a.Status != b.Status {
		return false
	}
	return normalFailure(a.Message) == normalFailure(b.Message)
}

func normalFailure(s string) string {
	for _, v := range volatileText {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}
