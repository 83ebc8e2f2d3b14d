package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// testCase is one spec of a JUnit report.
type testCase struct {
	Name    string
	Status  string // passed, failed, skipped (or errored, timedout, ...)
	Time    time.Duration
	Message string // failure or skip message, first line
	spec    bool   // an [It] spec, not a suite node ([SynchronizedBeforeSuite] ...)
}

// junit is the part of ginkgo's JUnit report read here.
type junit struct {
	Suites []struct {
		Cases []struct {
			Name    string  `xml:"name,attr"`
			Status  string  `xml:"status,attr"`
			Time    float64 `xml:"time,attr"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// readJUnit returns the specs of a JUnit report that ran or were skipped for
// a reason (ginkgo also lists every spec the focus left out, as skipped
// without one: those are dropped), and the suite's own nodes
// ([SynchronizedBeforeSuite] ...) when they failed.
func readJUnit(path string) ([]testCase, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var j junit
	if err := xml.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []testCase
	for _, s := range j.Suites {
		for _, c := range s.Cases {
			tc := testCase{Name: strings.TrimPrefix(c.Name, "[It] "), Status: c.Status,
				Time: time.Duration(c.Time * float64(time.Second)), spec: strings.HasPrefix(c.Name, "[It] ")}
			switch {
			case c.Failure != nil:
				tc.Message = c.Failure.Message
				if tc.Message == "" {
					tc.Message = failureText(c.Failure.Text)
				}
			case c.Error != nil:
				tc.Message = c.Error.Message
			case c.Skipped != nil:
				tc.Message = c.Skipped.Message
			}
			if tc.Status == "" {
				tc.Status = "passed"
				if c.Failure != nil || c.Error != nil {
					tc.Status = "failed"
				} else if c.Skipped != nil {
					tc.Status = "skipped"
				}
			}
			if tc.Status == "skipped" && (tc.Message == "" || tc.Message == "skipped") {
				continue // not in the focus
			}
			if !tc.spec && tc.Status == "passed" {
				continue // a suite node ([SynchronizedBeforeSuite], [ReportAfterSuite] ...) that passed
			}
			tc.Message = firstLine(tc.Message)
			out = append(out, tc)
		}
	}
	return out, nil
}

// failureText is the gist of ginkgo's failure text: up to its location
// ("In [It] at: ..."), on one line, without the "[FAILED] " tag.
func failureText(s string) string {
	if i := strings.Index(s, "\nIn ["); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimPrefix(strings.TrimSpace(s), "[FAILED] ")
	return strings.Join(strings.Fields(s), " ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 240 {
		s = s[:240] + "…"
	}
	return s
}

func summary(cases []testCase) string {
	n := map[string]int{}
	for _, c := range cases {
		n[c.Status]++
	}
	var keys []string
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
	}
	if len(parts) == 0 {
		return "no tests"
	}
	return strings.Join(parts, ", ")
}

// report is both modes' results side by side.
type report struct {
	runs  []modeRun
	focus string
	skip  string
	fast  bool
	nodes int // real nodes; 0: not recorded (one)
	want  expectation
	total time.Duration
}

var modeTitle = map[string]string{
	modeEbbflow: "ebbflow-autoscaler (drop-in)",
	modeKCM:     "kube-controller-manager",
}

// shortName drops the common prefix of every HPA test's name.
func shortName(n string) string {
	n = strings.TrimPrefix(n, "[sig-autoscaling] ")
	n = strings.TrimPrefix(n, "[Feature:HPA] ")
	return n
}

func (r report) markdown() string {
	var b strings.Builder
	sel := "a selection"
	switch {
	case r.fast:
		sel = "the fast subset"
	case r.focus == hpaFocus && r.skip == "":
		sel = "the whole selection"
	}
	fmt.Fprintf(&b, "# Kubernetes v1.37.2 HPA e2e tests: %s\n\n", sel)
	fmt.Fprintf(&b, "Focus: `%s`.", r.focus)
	if r.skip != "" {
		fmt.Fprintf(&b, " Skip: `%s`.", r.skip)
	}
	fmt.Fprintf(&b, " Run %s, %v in all (both modes, the cluster and the images).", time.Now().UTC().Format("2006-01-02 15:04 MST"), r.total.Round(time.Second))
	if r.nodes > 1 {
		fmt.Fprintf(&b, " %d real nodes on one machine.", r.nodes)
	}
	b.WriteString("\n\n")
	for _, m := range r.runs {
		fmt.Fprintf(&b, "- %s: %s in %v (e2e.test exit %d; log `%s/e2e.log`)\n", modeTitle[m.mode], summary(m.cases), m.elapsed.Round(time.Second), m.exit, m.dir)
	}
	b.WriteString("\n| test |")
	for _, m := range r.runs {
		fmt.Fprintf(&b, " %s |", modeTitle[m.mode])
	}
	b.WriteString("\n|---|")
	for range r.runs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	var names []string
	seen := map[string]bool{}
	byMode := make([]map[string]testCase, len(r.runs))
	for i, m := range r.runs {
		byMode[i] = map[string]testCase{}
		for _, c := range m.cases {
			byMode[i][c.Name] = c
			if !seen[c.Name] {
				seen[c.Name] = true
				names = append(names, c.Name)
			}
		}
	}
	sort.Strings(names)
	var notes []string
	for _, n := range names {
		fmt.Fprintf(&b, "| %s |", strings.ReplaceAll(shortName(n), "|", `\|`))
		for i := range r.runs {
			c, ok := byMode[i][n]
			switch {
			case !ok:
				b.WriteString(" — |")
			case c.Status == "passed":
				fmt.Fprintf(&b, " passed, %s |", fmtDur(c.Time))
			default:
				notes = append(notes, fmt.Sprintf("%s, %s: %s", modeTitle[r.runs[i].mode], shortName(n), c.Message))
				fmt.Fprintf(&b, " **%s**, %s [%d] |", c.Status, fmtDur(c.Time), len(notes))
			}
		}
		b.WriteString("\n")
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for i, n := range notes {
			fmt.Fprintf(&b, "%d. %s\n", i+1, n)
		}
	}
	return b.String()
}

func fmtDur(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	return strconv.Itoa(s/60) + "m" + fmt.Sprintf("%02ds", s%60)
}
