package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// decisionView is what explain shows of one autoscaling object: its identity,
// its scale target, its decision record and its conditions. Reading it from
// the cluster is explain's I/O; everything in this file is pure.
type decisionView struct {
	// Kind is "Autoscaler" or "HorizontalPodAutoscaler".
	Kind            string
	Namespace, Name string
	// Target is the scale target as KIND/NAME.
	Target string
	// Record is the last decision; nil when there is none yet.
	Record     *v1alpha1.DecisionRecord
	Conditions []autoscalingv2.HorizontalPodAutoscalerCondition
	// ResourceVersion is the object's, for watches.
	ResourceVersion string
}

// Output formats of explain.
const (
	outputTable = ""
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// renderRecord returns the record as indented JSON or as YAML, each ending
// with a newline. YAML documents start with "---" so that a stream of them
// (--watch) stays valid.
func renderRecord(rec *v1alpha1.DecisionRecord, format string) ([]byte, error) {
	switch format {
	case outputJSON:
		b, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode decision record: %w", err)
		}
		return append(b, '\n'), nil
	case outputYAML:
		b, err := yaml.Marshal(rec)
		if err != nil {
			return nil, fmt.Errorf("encode decision record: %w", err)
		}
		return append([]byte("---\n"), b...), nil
	}
	return nil, fmt.Errorf("unknown output format %q", format)
}

// renderTable explains v's decision for a reader: header, metrics, winning
// proposal, the steps that changed it, and the conditions. now is the
// reader's time, for the age of the decision; sample ages are taken at
// decision time. v.Record must not be nil.
func renderTable(v decisionView, now time.Time) string {
	var b strings.Builder
	rec := v.Record
	writeHeader(&b, v, now)
	b.WriteString("\nMetrics:\n")
	writeMetrics(&b, rec)
	b.WriteString("\n")
	writeProposal(&b, rec)
	b.WriteString("\nSteps that changed the proposal:\n")
	writeSteps(&b, rec)
	b.WriteString("\nConditions:\n")
	writeConditions(&b, v.Conditions)
	return b.String()
}

func writeHeader(b *strings.Builder, v decisionView, now time.Time) {
	rec := v.Record
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s:\t%s/%s\n", v.Kind, v.Namespace, v.Name)
	fmt.Fprintf(tw, "Target:\t%s\n", orDash(v.Target))
	fmt.Fprintf(tw, "Replicas:\t%d → %d\n", rec.CurrentReplicas, rec.DesiredReplicas)
	fmt.Fprintf(tw, "Outcome:\t%s (%s)\n", orDash(string(rec.Outcome)), scaledText(rec))
	by := ""
	if rec.EvaluatedBy != "" {
		by = " by " + oneLine(rec.EvaluatedBy)
	}
	fmt.Fprintf(tw, "Decided:\t%s (%s ago)%s\n", rec.Time.UTC().Format(time.RFC3339), age(now.Sub(rec.Time.Time)), by)
	if rec.Error != "" {
		fmt.Fprintf(tw, "Error:\t%s\n", oneLine(rec.Error))
	}
	for _, c := range v.Conditions {
		if c.Type == evaluation.ConditionSchedule && c.Status == corev1.ConditionTrue {
			fmt.Fprintf(tw, "Schedule:\t%s\n", oneLine(c.Message))
		}
	}
	_ = tw.Flush()
}

// scaledText says whether the scale was written, or why not.
func scaledText(rec *v1alpha1.DecisionRecord) string {
	if rec.Scaled {
		return "scale written"
	}
	if rec.NotScaledReason == "" {
		return "not scaled"
	}
	return "not scaled: " + oneLine(rec.NotScaledReason)
}

func writeMetrics(b *strings.Builder, rec *v1alpha1.DecisionRecord) {
	if len(rec.Metrics) == 0 {
		b.WriteString("  none read\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tNAME\tVALUE\tTARGET\tAGE\tPROPOSAL\tREASON")
	for _, m := range rec.Metrics {
		sample := "-"
		if m.Timestamp != nil {
			sample = age(rec.Time.Sub(m.Timestamp.Time))
		}
		proposal, reason := "-", m.Reason
		if m.Replicas != nil {
			proposal = strconv.Itoa(int(*m.Replicas))
		}
		if m.Error != "" {
			proposal, reason = "error", m.Error
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(m.Type), orDash(oneLine(m.Name)),
			quantity(m.Value, m.TargetType), target(m), sample, proposal, orDash(oneLine(reason)))
	}
	_ = tw.Flush()
}

// quantity prints a metric value; utilizations are percentages.
func quantity(q *resource.Quantity, targetType string) string {
	if q == nil {
		return "-"
	}
	if targetType == string(autoscalingv2.UtilizationMetricType) {
		return q.String() + "%"
	}
	return q.String()
}

func target(m v1alpha1.MetricRecord) string {
	if m.Target == nil {
		return orDash(m.TargetType)
	}
	return m.TargetType + " " + quantity(m.Target, m.TargetType)
}

func writeProposal(b *strings.Builder, rec *v1alpha1.DecisionRecord) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	switch {
	case rec.Proposal == nil:
		fmt.Fprintf(tw, "Winning proposal:\tnone (no metric gave a usable proposal)\n")
	case rec.WinningMetric == "":
		fmt.Fprintf(tw, "Winning proposal:\t%d\n", *rec.Proposal)
	default:
		fmt.Fprintf(tw, "Winning proposal:\t%d from %s\n", *rec.Proposal, oneLine(rec.WinningMetric))
	}
	fmt.Fprintf(tw, "Desired replicas:\t%d\n", rec.DesiredReplicas)
	_ = tw.Flush()
}

func writeSteps(b *strings.Builder, rec *v1alpha1.DecisionRecord) {
	if len(rec.Steps) == 0 {
		b.WriteString("  none\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  STAGE\tFROM → TO\tMESSAGE")
	for _, s := range rec.Steps {
		fmt.Fprintf(tw, "  %s\t%d → %d\t%s\n", orDash(s.Stage), s.From, s.To, orDash(oneLine(s.Message)))
	}
	_ = tw.Flush()
}

func writeConditions(b *strings.Builder, conds []autoscalingv2.HorizontalPodAutoscalerCondition) {
	if len(conds) == 0 {
		b.WriteString("  none\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range conds {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", orDash(string(c.Type)), orDash(string(c.Status)),
			orDash(c.Reason), orDash(oneLine(c.Message)))
	}
	_ = tw.Flush()
}

// age formats a duration as kubectl does ("12s", "3m4s"); negative ones
// (clocks out of step) keep their sign.
func age(d time.Duration) string {
	if d < 0 {
		return "-" + duration.HumanDuration(-d)
	}
	return duration.HumanDuration(d)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a text stored in the cluster on one line and free of
// control characters, so it can neither break the table nor drive the
// terminal.
func oneLine(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			b.WriteRune('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
