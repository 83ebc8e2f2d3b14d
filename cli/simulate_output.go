package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	simsource "github.com/ebbflow/ebbflow/autoscaler/simulate/source"
)

// writeSimulationTable prints the summary of every spec, then each spec's
// changes.
func writeSimulationTable(w io.Writer, rs []replayed, step time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SPEC\tSCALE EVENTS (UP/DOWN)\tMIN\tMAX\tREPLICA-HOURS\tUNDER-PROVISIONED\tFAILED STEPS\tACTUAL REPLICA-HOURS\tSHORT POD-SECONDS\tORACLE REPLICA-HOURS\tORACLE SHORT POD-SECONDS")
	for _, r := range rs {
		s := r.result.Summary
		fmt.Fprintf(tw, "%s\t%d (%d/%d)\t%d\t%d\t%.1f\t%s\t%d\t%s\t%s\n", r.spec.name, s.ScaleEvents, s.ScaleUps, s.ScaleDowns,
			s.MinReplicas, s.MaxReplicas, s.ReplicaHours, s.UnderProvisioned, s.FailedSteps, actualHours(r.actual, step), scoreText(s.Score))
	}
	tw.Flush()
	for _, r := range rs {
		fmt.Fprintf(w, "\n%s: changes\n", r.spec.name)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tFROM\tTO\tACTUAL\tMETRICS\tREASON")
		for i, st := range r.result.Steps {
			if !st.Rescaled {
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", st.Time.UTC().Format(time.RFC3339), st.Current, st.Replicas,
				actualAt(r.actual, i), metricsText(r, st), st.Reason)
		}
		tw.Flush()
	}
}

// scoreText is the score's columns, "-" each when nothing was scored.
func scoreText(s simulate.Score) string {
	if !s.Scored {
		return "-\t-\t-"
	}
	return fmt.Sprintf("%.0f\t%.1f\t%.0f", s.ShortPodSeconds, s.Oracle.ReplicaHours, s.Oracle.ShortPodSeconds)
}

// actualHours is the replica-hours of the actual replicas, "-" when unknown.
func actualHours(actual []int64, step time.Duration) string {
	if actual == nil {
		return "-"
	}
	var h float64
	for _, v := range actual {
		if v != simulate.Missing {
			h += float64(v) * step.Hours()
		}
	}
	return fmt.Sprintf("%.1f", h)
}

func actualAt(actual []int64, i int) string {
	if i >= len(actual) || actual[i] == simulate.Missing {
		return "-"
	}
	return fmt.Sprint(actual[i])
}

// metricsText shows each metric's value at a step: name=value.
func metricsText(r replayed, st simulate.Step) string {
	parts := make([]string, len(st.Values))
	for j, v := range st.Values {
		parts[j] = evaluation.MetricName(r.spec.spec.HPA.Metrics[j]) + "=" + milliText(v)
	}
	return strings.Join(parts, ",")
}

func milliText(v int64) string {
	if v == simulate.Missing {
		return "missing"
	}
	return fmt.Sprintf("%g", float64(v)/1000)
}

// jsonStep is one step in -o json. Values are in the metric's units; null
// when missing.
type jsonStep struct {
	Time             time.Time  `json:"time"`
	Replicas         int32      `json:"replicas"`
	Current          int32      `json:"current"`
	Ready            int32      `json:"ready"`
	Actual           *int64     `json:"actual,omitempty"`
	Values           []*float64 `json:"values"`
	Rescaled         bool       `json:"rescaled,omitempty"`
	Failed           bool       `json:"failed,omitempty"`
	UnderProvisioned bool       `json:"underProvisioned,omitempty"`
	Reason           string     `json:"reason,omitempty"`
	// Needed is the ready pods the load needed (absent when not scored).
	Needed *int32 `json:"needed,omitempty"`
}

type jsonSummary struct {
	ScaleEvents             int     `json:"scaleEvents"`
	ScaleUps                int     `json:"scaleUps"`
	ScaleDowns              int     `json:"scaleDowns"`
	MinReplicas             int32   `json:"minReplicas"`
	MaxReplicas             int32   `json:"maxReplicas"`
	ReplicaHours            float64 `json:"replicaHours"`
	UnderProvisionedSeconds float64 `json:"underProvisionedSeconds"`
	FailedSteps             int     `json:"failedSteps"`
	// Score is absent when no metric has a per-pod target.
	Score *jsonScore `json:"score,omitempty"`
}

// jsonScore is simulate.Score.
type jsonScore struct {
	ShortPodSeconds       float64 `json:"shortPodSeconds"`
	OracleReplicaHours    float64 `json:"oracleReplicaHours"`
	OracleShortPodSeconds float64 `json:"oracleShortPodSeconds"`
}

type jsonSpec struct {
	Name    string      `json:"name"`
	Metrics []string    `json:"metrics"`
	Summary jsonSummary `json:"summary"`
	Steps   []jsonStep  `json:"steps"`
}

// writeSimulationJSON writes every step of every spec as one JSON document.
func writeSimulationJSON(w io.Writer, rs []replayed, rng simsource.Range) error {
	doc := struct {
		Start time.Time  `json:"start"`
		End   time.Time  `json:"end"`
		Step  string     `json:"step"`
		Specs []jsonSpec `json:"specs"`
	}{Start: rng.Start.UTC(), End: rng.End.UTC(), Step: rng.Step.String()}
	for _, r := range rs {
		sum := r.result.Summary
		js := jsonSpec{Name: r.spec.name, Steps: make([]jsonStep, len(r.result.Steps)), Summary: jsonSummary{
			ScaleEvents: sum.ScaleEvents, ScaleUps: sum.ScaleUps, ScaleDowns: sum.ScaleDowns,
			MinReplicas: sum.MinReplicas, MaxReplicas: sum.MaxReplicas, ReplicaHours: sum.ReplicaHours,
			UnderProvisionedSeconds: sum.UnderProvisioned.Seconds(), FailedSteps: sum.FailedSteps,
		}}
		if sc := sum.Score; sc.Scored {
			js.Summary.Score = &jsonScore{ShortPodSeconds: sc.ShortPodSeconds,
				OracleReplicaHours: sc.Oracle.ReplicaHours, OracleShortPodSeconds: sc.Oracle.ShortPodSeconds}
		}
		for _, m := range r.spec.spec.HPA.Metrics {
			js.Metrics = append(js.Metrics, evaluation.MetricName(m))
		}
		for i, st := range r.result.Steps {
			s := jsonStep{Time: st.Time.UTC(), Replicas: st.Replicas, Current: st.Current, Ready: st.Ready,
				Rescaled: st.Rescaled, Failed: st.Failed, UnderProvisioned: st.UnderProvisioned, Reason: st.Reason,
				Values: make([]*float64, len(st.Values))}
			if st.Needed >= 0 {
				s.Needed = &r.result.Steps[i].Needed
			}
			if i < len(r.actual) && r.actual[i] != simulate.Missing {
				s.Actual = &r.actual[i]
			}
			for j, v := range st.Values {
				if f := float64(v) / 1000; v != simulate.Missing && !math.IsNaN(f) {
					s.Values[j] = &f
				}
			}
			js.Steps[i] = s
		}
		doc.Specs = append(doc.Specs, js)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
