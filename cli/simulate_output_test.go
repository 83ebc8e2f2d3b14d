package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	simsource "github.com/ebbflow/ebbflow/autoscaler/simulate/source"
)

// The score is shown after the existing columns and in the JSON summary;
// a spec without a per-pod target shows "-" and no score.
func TestSimulationScoreOutput(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	metric := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType,
		External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "rps"}}}
	spec := evaluation.Spec{HPA: autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: []autoscalingv2.MetricSpec{metric}}}
	scored := replayed{spec: namedSpec{name: "Autoscaler/web", spec: spec}, result: simulate.Result{
		Steps: []simulate.Step{{Time: at, Replicas: 2, Current: 2, Ready: 2, Needed: 3, Values: []int64{3000}}},
		Summary: simulate.Summary{ReplicaHours: 1.5, Score: simulate.Score{Scored: true, ShortPodSeconds: 45,
			ReplicaHours: 1.5, Oracle: simulate.OracleScore{ReplicaHours: 1.25}}},
	}}
	unscored := replayed{spec: namedSpec{name: "Autoscaler/queue", spec: spec}, result: simulate.Result{
		Steps: []simulate.Step{{Time: at, Replicas: 1, Current: 1, Ready: 1, Needed: -1, Values: []int64{1000}}},
	}}
	var table bytes.Buffer
	writeSimulationTable(&table, []replayed{scored, unscored}, 15*time.Second)
	lines := strings.Split(table.String(), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[0]), "ACTUAL REPLICA-HOURS  SHORT POD-SECONDS  ORACLE REPLICA-HOURS  ORACLE SHORT POD-SECONDS") {
		t.Errorf("header %q", lines[0])
	}
	if f := strings.Fields(lines[1]); strings.Join(f[len(f)-3:], " ") != "45 1.2 0" {
		t.Errorf("scored row %q, want 45 1.2 0 at its end", lines[1])
	}
	if f := strings.Fields(lines[2]); strings.Join(f[len(f)-3:], " ") != "- - -" {
		t.Errorf("unscored row %q", lines[2])
	}
	var out bytes.Buffer
	if err := writeSimulationJSON(&out, []replayed{scored, unscored}, simsource.Range{Start: at, End: at, Step: 15 * time.Second}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Specs []struct {
			Summary struct {
				Score *struct {
					ShortPodSeconds    float64 `json:"shortPodSeconds"`
					OracleReplicaHours float64 `json:"oracleReplicaHours"`
				} `json:"score"`
			} `json:"summary"`
			Steps []struct {
				Needed *int32 `json:"needed"`
			} `json:"steps"`
		} `json:"specs"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	s, u := doc.Specs[0], doc.Specs[1]
	if s.Summary.Score == nil || s.Summary.Score.ShortPodSeconds != 45 || s.Summary.Score.OracleReplicaHours != 1.25 || s.Steps[0].Needed == nil || *s.Steps[0].Needed != 3 {
		t.Errorf("scored JSON %+v", s)
	}
	if u.Summary.Score != nil || u.Steps[0].Needed != nil {
		t.Errorf("unscored JSON has a score: %+v", u)
	}
}
