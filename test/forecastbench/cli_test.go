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
// 100; forecast, when not empty, is its metric's forecast (flow YAML).
func cliSpec(name, forecast string) string {
	spec := `apiVersion: autoscaling.ebbflow.dev/v1alpha1
kind: Autoscaler
metadata: {name: ` + name + `, namespace: bench}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 100
  metrics:
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
// default method).
var cliSpecs = cliSpec("reactive", "") + "---\n" + cliSpec("forecast", "{season: Daily, podStartup: 90s, lead: 150s}")

// simulateWithForecast runs `ebbflow simulate` as a user would try a
// forecast on their history: the last 3 days of p, after a 5-day warm-up,
// the reactive spec beside the one with a forecast.
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
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Specs) != 2 {
		t.Fatalf("output: %v\n%.2000s", err, out.String())
	}
	reactive, fc := doc.Specs[0], doc.Specs[1]
	if len(fc.Steps) != 3*1440+1 || reactive.Summary.Score == nil || fc.Summary.Score == nil {
		t.Fatalf("%d steps shown (want the 3 days without the warm-up), scores %+v %+v", len(fc.Steps), reactive.Summary, fc.Summary)
	}
	ahead := 0
	for _, st := range fc.Steps {
		if strings.HasPrefix(st.Reason, "forecast of trace_requests_per_second") {
			ahead++
		}
	}
	t.Logf("reactive at 90%%: %.0f replica-hours, %.0f short pod-seconds; with a forecast: %.0f, %.0f, %d scale-ups for the forecast",
		reactive.Summary.ReplicaHours, reactive.Summary.Score.ShortPodSeconds, fc.Summary.ReplicaHours, fc.Summary.Score.ShortPodSeconds, ahead)
	if ahead == 0 || fc.Summary.Score.ShortPodSeconds > reactive.Summary.Score.ShortPodSeconds || fc.Summary.ReplicaHours < reactive.Summary.ReplicaHours {
		t.Error("the forecast, a floor with its history from the warm-up, must scale up ahead, never be shorter of pods than the reactive spec, never hold fewer replicas")
	}
}
