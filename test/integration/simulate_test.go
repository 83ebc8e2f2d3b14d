package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	"github.com/ebbflow/ebbflow/cli"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// recordedSeries is one series of the recorded history: its value minutes
// after the start of the history, false where it has no sample.
type recordedSeries struct {
	family, labels string
	value          func(min float64) (float64, bool)
}

const (
	historyLength = 60 * time.Minute
	sampleEvery   = 15 * time.Second
	// sampleOffset keeps samples off the 15 s query grid, so that no step
	// sits exactly at the edge of Prometheus' 5 m lookback.
	sampleOffset = 7 * time.Second
	lookback     = 5 * time.Minute
)

func perPod(m float64) (float64, bool) {
	if m < 30 {
		return 50, true
	}
	return 200, true
}

func orders(m float64) (float64, bool) {
	switch {
	case m >= 45 && m < 52:
		return 0, false // a gap longer than the lookback
	case m < 20 || m >= 40:
		return 30, true
	}
	return 120, true
}

func constantValue(v float64) func(float64) (float64, bool) {
	return func(float64) (float64, bool) { return v, true }
}

var history = []recordedSeries{
	{"http_requests_per_second", `{namespace="ns1",pod="web-7d9f8-aaaaa"}`, perPod},
	{"http_requests_per_second", `{namespace="ns1",pod="web-7d9f8-bbbbb"}`, perPod},
	// Not web's pods: another Deployment, another namespace.
	{"http_requests_per_second", `{namespace="ns1",pod="webhook-5c5c5-zzzzz"}`, constantValue(10000)},
	{"http_requests_per_second", `{namespace="ns2",pod="web-7d9f8-ccccc"}`, constantValue(10000)},
	{"queue_messages_ready", `{queue="orders"}`, orders},
	{"queue_messages_ready", `{queue="emails"}`, constantValue(999)},
	{"kube_deployment_status_replicas", `{namespace="ns1",deployment="web"}`, constantValue(2)},
}

const simulateRules = `
rules:
- seriesQuery: 'http_requests_per_second{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
# Prometheus rejects this query when it runs: two series with one label set.
- seriesQuery: 'http_requests_per_second{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^http_requests_per_second$", as: "broken_rps"}
  metricsQuery: 'label_replace(<<.Series>>{<<.LabelMatchers>>}, "pod", "same", "pod", ".*")'
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

const simulateSpecs = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns1}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: ns1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests_per_second}
      target: {type: AverageValue, averageValue: "100"}
---
apiVersion: autoscaling.ebbflow.dev/v1alpha1
kind: Autoscaler
metadata: {name: worker, namespace: ns1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - type: External
    external:
      metric:
        name: queue_messages_ready
        selector: {matchLabels: {queue: orders}}
      target: {type: AverageValue, averageValue: "10"}
`

// writeHistory writes the history as OpenMetrics and turns it into TSDB
// blocks in dataDir with promtool, as an operator would backfill.
func writeHistory(t *testing.T, start time.Time, dataDir string) {
	t.Helper()
	writeSeries(t, start, dataDir, history)
}

// writeSeries backfills series (grouped by family) into dataDir; a family
// ending in _total is a counter, any other a gauge.
func writeSeries(t *testing.T, start time.Time, dataDir string, series []recordedSeries) {
	t.Helper()
	var b bytes.Buffer
	last := ""
	for _, s := range series {
		if s.family != last {
			if base, ok := strings.CutSuffix(s.family, "_total"); ok {
				fmt.Fprintf(&b, "# TYPE %s counter\n", base)
			} else {
				fmt.Fprintf(&b, "# TYPE %s gauge\n", s.family)
			}
			last = s.family
		}
		for at := sampleOffset; at < historyLength; at += sampleEvery {
			if v, ok := s.value(at.Minutes()); ok {
				fmt.Fprintf(&b, "%s%s %g %d\n", s.family, s.labels, v, start.Add(at).Unix())
			}
		}
	}
	b.WriteString("# EOF\n")
	if err := promtest.Backfill(context.Background(), b.Bytes(), dataDir, promtest.BackfillOptions{}); err != nil {
		t.Fatal(err)
	}
}

// expected is what Prometheus serves at step time at of the recorded series
// accepted by keep, summed: the latest sample within the lookback.
func expected(start, at time.Time, keep func(recordedSeries) bool) int64 {
	sum, found := int64(0), false
	for _, s := range history {
		if !keep(s) {
			continue
		}
		since := at.Sub(start) - sampleOffset
		if since < 0 {
			continue
		}
		latest := sampleOffset + since/sampleEvery*sampleEvery
		if at.Sub(start.Add(latest)) >= lookback {
			continue
		}
		for ts := latest; ts >= sampleOffset && at.Sub(start.Add(ts)) < lookback; ts -= sampleEvery {
			if v, ok := s.value(ts.Minutes()); ok {
				sum, found = sum+int64(math.Round(v*1000)), true
				break
			}
		}
	}
	if !found {
		return simulate.Missing
	}
	return sum
}

type simulateJSON struct {
	Specs []struct {
		Name    string `json:"name"`
		Summary struct {
			ScaleEvents int `json:"scaleEvents"`
			FailedSteps int `json:"failedSteps"`
		} `json:"summary"`
		Steps []struct {
			Time     time.Time  `json:"time"`
			Replicas int32      `json:"replicas"`
			Actual   *int64     `json:"actual"`
			Values   []*float64 `json:"values"`
			Failed   bool       `json:"failed"`
		} `json:"steps"`
	} `json:"specs"`
}

func runSimulate(args ...string) (stdout, stderr string, err error) {
	cmd := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"simulate"}, args...))
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// TestSimulateAgainstPrometheus backfills a known hour of history into a
// real Prometheus and checks that `ebbflow simulate` reads it as the adapter
// would serve it and replays it to the replica sequences the replay of the
// known series gives, with the known scale-ups, scale-downs and gap.
func TestSimulateAgainstPrometheus(t *testing.T) {
	start := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
	dir := t.TempDir()
	writeHistory(t, start, filepath.Join(dir, "data"))
	prom := promtest.Start(t, promtest.Options{Dir: dir})
	rules := writeFile(t, "rules.yaml", []byte(simulateRules))
	specs := writeFile(t, "specs.yaml", []byte(simulateSpecs))
	from, to := start.Add(time.Minute), start.Add(59*time.Minute)
	base := []string{"-f", specs, "--rules", rules, "--prometheus-url", prom.URL(),
		"--start", from.UTC().Format(time.RFC3339), "--end", to.UTC().Format(time.RFC3339)}

	stdout, stderr, err := runSimulate(append(base, "-o", "json")...)
	mustf(t, err == nil, "simulate: %v\n%s", err, stderr)
	mustf(t, strings.Contains(stderr, "Autoscaler/worker: spec.metrics[0]:") && strings.Contains(stderr, "steps have no value"),
		"the gap is not reported:\n%s", stderr)
	var got simulateJSON
	mustf(t, json.Unmarshal([]byte(stdout), &got) == nil, "output is not JSON:\n%s", stdout)
	mustf(t, len(got.Specs) == 2, "%d specs replayed, want web and worker", len(got.Specs))

	checkKnownReplay(t, got, start, from, to)
	web, worker := got.Specs[0], got.Specs[1]
	at := func(m int) int { return (m - 1) * 4 } // step index m minutes after the start of the history
	mustf(t, web.Steps[0].Actual != nil && *web.Steps[0].Actual == 2, "actual replicas of web not read")
	mustf(t, web.Steps[at(4)].Replicas == 2 && web.Steps[at(10)].Replicas == 1, "web: load 100 at target 100 keeps 2 pods for the 5 m stabilization, then 1: %d, %d", web.Steps[at(4)].Replicas, web.Steps[at(10)].Replicas)
	mustf(t, web.Steps[at(58)].Replicas == 4, "web: load 400 at target 100 ends at 4 pods, got %d", web.Steps[at(58)].Replicas)
	mustf(t, worker.Steps[at(10)].Replicas == 3 && worker.Steps[at(35)].Replicas == 12, "worker: 30 and 120 messages at 10 per worker: %d, %d", worker.Steps[at(10)].Replicas, worker.Steps[at(35)].Replicas)
	mustf(t, worker.Summary.FailedSteps > 0 && worker.Steps[at(51)].Failed && worker.Steps[at(51)].Values[0] == nil, "worker: the gap is not a failed metric: %+v", worker.Steps[at(51)])
	mustf(t, web.Steps[at(20)].Values[0] != nil && *web.Steps[at(20)].Values[0] == 100, "web: per-pod value %v at 1 pod, want the load 100", web.Steps[at(20)].Values[0])

	// EBBFLOW_SIMULATE_PLOT keeps the plot (the README's example is drawn so).
	plotFile := os.Getenv("EBBFLOW_SIMULATE_PLOT")
	if plotFile == "" {
		plotFile = filepath.Join(t.TempDir(), "replay.png")
	}
	table, _, err := runSimulate(append(base, "--plot", plotFile)...)
	t.Logf("table output:\n%s", table)
	mustf(t, err == nil && strings.Contains(table, "HorizontalPodAutoscaler/web") && strings.Contains(table, "queue_messages_ready=120"), "table output:\n%s", table)

	f, err := os.Open(plotFile)
	mustf(t, err == nil, "no plot written: %v", err)
	img, err := png.Decode(f)
	f.Close()
	mustf(t, err == nil && img.Bounds().Dx() > 500, "plot is not a PNG: %v", err)

	t.Run("errors", func(t *testing.T) { simulateErrors(t, start, prom.URL(), rules, specs, base) })
}

// checkKnownReplay requires each spec's replicas to be those the replay of
// the known series (what Prometheus serves of the recorded history) gives.
func checkKnownReplay(t *testing.T, got simulateJSON, start, from, to time.Time) {
	t.Helper()
	isWeb := func(s recordedSeries) bool {
		return s.family == "http_requests_per_second" && strings.Contains(s.labels, `namespace="ns1",pod="web-7d9f8-`)
	}
	isOrders := func(s recordedSeries) bool { return s.labels == `{queue="orders"}` }
	steps := int(to.Sub(from)/sampleEvery) + 1
	cfg := simulate.Config{Start: from, Step: sampleEvery, Steps: steps, PodStartup: simulate.DefaultPodStartup, Namespace: "ns1"}
	set := evaluation.DefaultSettings()
	cfg.Tolerance, cfg.DownscaleStabilization = set.Tolerance, set.DownscaleStabilization
	cfg.CPUInitializationPeriod, cfg.InitialReadinessDelay = set.CPUInitializationPeriod, set.InitialReadinessDelay
	for i, tc := range []struct {
		keep    func(recordedSeries) bool
		initial int32
	}{{isWeb, 2}, {isOrders, 1}} {
		spec := got.Specs[i]
		mustf(t, len(spec.Steps) == steps, "%s: %d steps, want %d", spec.Name, len(spec.Steps), steps)
		series := simulate.Series{Values: make([]int64, steps)}
		for k := range series.Values {
			series.Values[k] = expected(start, from.Add(time.Duration(k)*sampleEvery), tc.keep)
		}
		specs, err := loadTestSpec(t, i)
		mustf(t, err == nil, "%v", err)
		c := cfg
		c.InitialReplicas = tc.initial
		want, err := simulate.Run(c, specs, []simulate.Series{series})
		mustf(t, err == nil, "replay of the known series: %v", err)
		for k, st := range spec.Steps {
			if st.Replicas != want.Steps[k].Replicas {
				t.Fatalf("%s at %s: %d replicas (value %v), the known series (value %d) replay to %d", spec.Name, st.Time, st.Replicas, deref(st.Values[0]), series.Values[k], want.Steps[k].Replicas)
			}
		}
	}
}

// simulateErrors checks the clear errors of bad input against the running
// Prometheus at url.
func simulateErrors(t *testing.T, start time.Time, url, rules, specs string, base []string) {
	spec := func(metric string) string {
		return writeFile(t, "spec.yaml", []byte(strings.Replace(simulateSpecs[:strings.Index(simulateSpecs, "---\napiVersion: autoscaling.ebbflow.dev")], "name: http_requests_per_second", "name: "+metric, 1)))
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no rule", []string{"-f", spec("unknown_metric"), "--rules", rules, "--prometheus-url", url, "--since", "1h"},
			"spec.metrics[0]: pods metric unknown_metric: no rule in the rule file's rules serves it"},
		{"query fails", []string{"-f", spec("broken_rps"), "--rules", rules, "--prometheus-url", url, "--start", base[7], "--end", base[9]},
			"pods metric broken_rps: query_range"},
		{"prometheus unreachable", []string{"-f", specs, "--rules", rules, "--prometheus-url", "http://127.0.0.1:1", "--since", "1h"},
			"prometheus: prometheus request"},
		{"empty range", []string{"-f", specs, "--rules", rules, "--prometheus-url", url, "--start", base[9], "--end", base[7]},
			"empty range"},
		{"no data in range", []string{"-f", specs, "--rules", rules, "--prometheus-url", url,
			"--start", start.Add(-10 * time.Hour).UTC().Format(time.RFC3339), "--end", start.Add(-9 * time.Hour).UTC().Format(time.RFC3339)},
			"no value of it in Prometheus between"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runSimulate(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}

}

// loadTestSpec decodes the i-th spec of simulateSpecs (0: the HPA, 1: the
// Autoscaler).
func loadTestSpec(t *testing.T, i int) (evaluation.Spec, error) {
	t.Helper()
	docs := strings.Split(simulateSpecs, "---\n")[1:]
	if i == 0 {
		var h autoscalingv2.HorizontalPodAutoscaler
		err := yaml.UnmarshalStrict([]byte(docs[0]), &h)
		return evaluation.Spec{HPA: h.Spec}, err
	}
	var a v1alpha1.Autoscaler
	err := yaml.UnmarshalStrict([]byte(docs[1]), &a)
	return evaluation.FromAutoscaler(&a.Spec), err
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
