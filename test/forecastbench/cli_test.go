package forecastbench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/cli"
)

// cliSpec is an Autoscaler for the taxi trace at 90 % of the capacity of
// 100; forecast, when not empty, is its metric's forecast (flow YAML);
// tolerance0 sets behavior.scaleUp.tolerance to 0.
func cliSpec(name, forecast string, tolerance0 bool) string {
	spec := `apiVersion: autoscaling.ebbflow.dev/v1alpha1
kind: Autoscaler
metadata: {name: ` + name + `, namespace: bench}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 100
` + map[bool]string{true: "  behavior: {scaleUp: {tolerance: \"0\"}}\n"}[tolerance0] + `  metrics:
  - type: External
    external:
      metric: {name: trace_requests_per_second, selector: {matchLabels: {trace: taxi}}}
      target: {type: AverageValue, averageValue: "90"}
`
	if forecast != "" {
		spec += "    forecast: " + forecast + "\n"
	}
	return spec
}

// cliSpecs are the reactive HPA and the same with a daily forecast (the
// default method, mode Always: on 8 days of taxi demand interpolated to
// minutes the backtest of the default mode finds a lower target as good,
// and this test is about the replay's mechanics), with the default
// tolerance and with a scale-up tolerance of 0.
var cliSpecs = strings.Join([]string{cliSpec("reactive", "", false), cliSpec("forecast", cliForecast, false),
	cliSpec("reactive-tolerance-0", "", true), cliSpec("forecast-tolerance-0", cliForecast, true)}, "---\n")

const cliForecast = "{season: Daily, podStartup: 90s, lead: 150s, mode: Always}"

// simulateWithForecast runs `ebbflow simulate` as a user would try a
// forecast on their history: the last 3 days of p, after a 5-day warm-up,
// the reactive spec beside the one with a forecast, with the default
// scale-up tolerance and with none.
func simulateWithForecast(t *testing.T, url string, p Placed) {
	dir := t.TempDir()
	specs, rules := filepath.Join(dir, "specs.yaml"), filepath.Join(dir, "rules.yaml")
	for f, data := range map[string]string{specs: cliSpecs, rules: Rules} {
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	end := p.Start.Add(time.Duration(len(p.Values)-1) * p.Step)
	from := end.Add(-3 * 24 * time.Hour)
	cmd := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"simulate", "-f", specs, "--rules", rules, "--prometheus-url", url, "-o", "json",
		"--start", from.UTC().Format(time.RFC3339), "--end", end.UTC().Format(time.RFC3339),
		"--step", "1m", "--pod-startup", "90s", "--warmup", "120h"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("simulate: %v\n%s", err, errOut.String())
	}
	var doc struct {
		Specs []struct {
			Name    string `json:"name"`
			Summary struct {
				ReplicaHours float64 `json:"replicaHours"`
				Score        *struct {
					ShortPodSeconds float64 `json:"shortPodSeconds"`
				} `json:"score"`
			} `json:"summary"`
			Steps []struct {
				Reason string `json:"reason"`
			} `json:"steps"`
		} `json:"specs"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Specs) != 4 {
		t.Fatalf("output: %v\n%.2000s", err, out.String())
	}
	for i, pair := range [][2]int{{0, 1}, {2, 3}} {
		reactive, fc := doc.Specs[pair[0]], doc.Specs[pair[1]]
		if len(fc.Steps) != 3*1440+1 || reactive.Summary.Score == nil || fc.Summary.Score == nil {
			t.Fatalf("%d steps shown (want the 3 days without the warm-up), scores %+v %+v", len(fc.Steps), reactive.Summary, fc.Summary)
		}
		ahead := 0
		for _, st := range fc.Steps {
			if strings.HasPrefix(st.Reason, "forecast of trace_requests_per_second") {
				ahead++
			}
		}
		t.Logf("%s at 90%%: %.0f replica-hours, %.0f short pod-seconds; %s: %.0f, %.0f, %d scale-ups for the forecast",
			reactive.Name, reactive.Summary.ReplicaHours, reactive.Summary.Score.ShortPodSeconds, fc.Name, fc.Summary.ReplicaHours, fc.Summary.Score.ShortPodSeconds, ahead)
		if ahead == 0 || fc.Summary.ReplicaHours < reactive.Summary.ReplicaHours {
			t.Errorf("%s: the forecast, a floor with its history from the warm-up, must scale up ahead and never hold fewer replicas", fc.Name)
		}
		// The score counts pods short of the target (not of the capacity).
		// With a scale-up tolerance a floor can be shorter of them: a count
		// it raised is within the tolerance of a later proposal the reactive
		// spec, from its lower count, scales up to. Without one every
		// proposal above the count is taken, so it cannot.
		if i == 1 && fc.Summary.Score.ShortPodSeconds > reactive.Summary.Score.ShortPodSeconds {
			t.Errorf("%s: with a scale-up tolerance of 0 the floor must never be shorter of pods than the reactive spec", fc.Name)
		}
	}
}
