package cli

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	simsource "github.com/ebbflow/ebbflow/autoscaler/simulate/source"
)

// replayed is one spec's replay, with the actual replicas of its target
// (nil when unknown).
type replayed struct {
	spec   namedSpec
	result simulate.Result
	actual []int64
}

func (o *simulateOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	specs, err := loadSpecs(o.files)
	if err != nil {
		return err
	}
	for _, s := range specs {
		for _, w := range s.warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: %s\n", s.name, w)
		}
	}
	o.step = stepFor(specs, o.step, cmd.Flags().Changed("step"), cmd.ErrOrStderr())
	shown, err := o.timeRange()
	if err != nil {
		return err
	}
	rng, warm, err := withWarmup(shown, o.warmup)
	if err != nil {
		return err
	}
	workloads, err := loadWorkloads(o.files)
	if err != nil {
		return err
	}
	// Metrics that cannot be replayed fail before Prometheus is asked.
	for _, s := range specs {
		if err := simulate.ValidateMetrics(&s.spec, podTemplate(o.requests, workloads, s, o.namespaceOf(s))); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	mapper := rulefile.DefaultRESTMapper()
	backends, names, err := prom.LoadBackendClients(o.backendsFile, prom.BackendDefaults{Timeout: o.conn.PrometheusTimeout, MaxResponseBytes: o.conn.MaxResponseBytes})
	if err != nil {
		return err
	}
	set, err := rules.ParseFileWith(o.rules, rules.Options{Mapper: mapper, Backends: names})
	if err != nil {
		return fmt.Errorf("rule file %s:\n%w", o.rules, err)
	}
	client, err := o.conn.Client()
	if err != nil {
		return err
	}
	named := make(map[string]simsource.Client, len(backends))
	timeouts := make(map[string]time.Duration, len(backends))
	for name, b := range backends {
		named[name], timeouts[name] = b.Client, b.Timeout
	}
	reader, err := simsource.New(simsource.Options{Rules: set, Client: client, Backends: named, BackendTimeouts: timeouts,
		Mapper: mapper, NaNValues: o.nanValues, Range: rng, Timeout: o.conn.PrometheusTimeout})
	if err != nil {
		return err
	}
	if err := reader.Check(ctx); err != nil {
		return err
	}
	out := make([]replayed, 0, len(specs))
	for _, s := range specs {
		r, err := o.replay(ctx, reader, rng, s, workloads, cmd.ErrOrStderr())
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		out = append(out, trimWarmup(r, warm, rng.Step, o.podStartup))
	}
	if o.plot != "" {
		if err := writeSimulationPlot(o.plot, out, shown); err != nil {
			return err
		}
	}
	if o.output == "json" {
		return writeSimulationJSON(cmd.OutOrStdout(), out, shown)
	}
	writeSimulationTable(cmd.OutOrStdout(), out, rng.Step)
	return nil
}

// stepFor is the replay's step: --step when given (a spec whose
// syncPeriodSeconds is shorter is evaluated every step, with a warning on
// w), else the shortest spec.syncPeriodSeconds of the specs when shorter than
// the default. A spec with a longer period is evaluated at its period (see
// simulate.Config).
func stepFor(specs []namedSpec, step time.Duration, given bool, w io.Writer) time.Duration {
	for _, s := range specs {
		p := s.spec.SyncPeriod
		switch {
		case p <= 0 || p >= step:
		case given:
			fmt.Fprintf(w, "warning: %s: syncPeriodSeconds %s is shorter than --step %s; it is evaluated every %s\n", s.name, p, step, step)
		default:
			step = p
		}
	}
	return step
}

// timeRange is the range of the flags, to the millisecond (Prometheus' resolution).
func (o *simulateOptions) timeRange() (simsource.Range, error) {
	end := o.now()
	if o.end != "" {
		t, err := time.Parse(time.RFC3339, o.end)
		if err != nil {
			return simsource.Range{}, fmt.Errorf("--end: %w", err)
		}
		end = t
	}
	start := end.Add(-o.since)
	if o.start != "" {
		t, err := time.Parse(time.RFC3339, o.start)
		if err != nil {
			return simsource.Range{}, fmt.Errorf("--start: %w", err)
		}
		start = t
	}
	rng := simsource.Range{Start: start.Truncate(time.Millisecond), End: end.Truncate(time.Millisecond), Step: o.step}
	if !rng.End.After(rng.Start) {
		return rng, fmt.Errorf("empty range: the end %s is not after the start %s", rng.End.Format(time.RFC3339), rng.Start.Format(time.RFC3339))
	}
	if n := rng.Steps(); n > simulate.MaxSteps {
		return rng, fmt.Errorf("the range holds %d steps, more than %d: use a longer --step or a shorter range", n, simulate.MaxSteps)
	}
	return rng, nil
}

// replay reads one spec's metrics and actual replicas and replays them.
// Gaps are reported on w as warnings.
func (o *simulateOptions) replay(ctx context.Context, reader *simsource.Reader, rng simsource.Range, s namedSpec, workloads []workload, w io.Writer) (replayed, error) {
	ns := o.namespaceOf(s)
	template := podTemplate(o.requests, workloads, s, ns)
	ref := s.spec.HPA.ScaleTargetRef
	q := simsource.Query{Namespace: ns, PodNames: podNamePattern(o.podNames, ref.Kind, ref.Name)}
	series := make([]simulate.Series, len(s.spec.HPA.Metrics))
	for i, m := range s.spec.HPA.Metrics {
		v, err := reader.Series(ctx, m, q)
		if err != nil {
			return replayed{}, fmt.Errorf("spec.metrics[%d]: %w", i, err)
		}
		if gaps := countMissing(v.Values); gaps > 0 {
			fmt.Fprintf(w, "warning: %s: spec.metrics[%d]: %d of %d steps have no value; they are replayed as a metric the controller could not read\n", s.name, i, gaps, len(v.Values))
		}
		series[i] = v
	}
	if len(s.spec.Proportional) > 0 {
		sizes, err := reader.ClusterSizes(ctx)
		if err != nil {
			return replayed{}, fmt.Errorf("spec.metrics[%d] (ClusterProportional): %w; cannot replay it", s.spec.Proportional[0].Index, err)
		}
		for range s.spec.Proportional {
			series = append(series, simulate.Series{Sizes: sizes})
		}
	}
	r := replayed{spec: s}
	query := o.actualQuery
	if query == "" {
		query = simsource.ActualQuery(ref.Kind, ns, ref.Name)
	}
	if query != "" {
		actual, err := reader.Replicas(ctx, query)
		switch {
		case err != nil:
			fmt.Fprintf(w, "warning: %s: actual replicas not shown: %v\n", s.name, err)
		case countMissing(actual) < len(actual):
			r.actual = actual
		}
	}
	cfg := simulate.Config{
		Start: rng.Start, Step: rng.Step, Steps: rng.Steps(),
		InitialReplicas: o.initial(s.spec, r.actual), PodStartup: o.podStartup, HistoryRefresh: o.historyRefresh, Namespace: ns,
		Template: template, ResourceWindow: reader.ResourceWindow(),
		Settings: o.settings,
	}
	var err error
	r.result, err = simulate.Run(cfg, s.spec, series)
	return r, err
}

// namespaceOf is the namespace s is replayed in: -n, else its own, else
// default.
func (o *simulateOptions) namespaceOf(s namedSpec) string {
	switch {
	case o.namespace != "":
		return o.namespace
	case s.namespace != "":
		return s.namespace
	}
	return "default"
}

// initial is the replica count before the first evaluation.
func (o *simulateOptions) initial(spec evaluation.Spec, actual []int64) int32 {
	if o.initialReplicas >= 0 {
		return o.initialReplicas
	}
	if len(actual) > 0 && actual[0] != simulate.Missing && actual[0] >= 0 {
		return int32(min(actual[0], int64(spec.HPA.MaxReplicas)))
	}
	return max(evaluation.MinReplicas(&spec.HPA), 1)
}

// podNamePattern is the flag's pattern, or the names a controller of kind
// gives the pods of name.
func podNamePattern(flag, kind, name string) *regexp.Regexp {
	if flag != "" {
		return regexp.MustCompile(flag) // validated
	}
	q := regexp.QuoteMeta(name)
	switch kind {
	case "Deployment":
		return regexp.MustCompile("^" + q + "-[a-z0-9]+-[a-z0-9]+$")
	case "StatefulSet":
		return regexp.MustCompile("^" + q + "-[0-9]+$")
	}
	return regexp.MustCompile("^" + q + "-[a-z0-9-]+$")
}

func countMissing(v []int64) int {
	n := 0
	for _, x := range v {
		if x == simulate.Missing {
			n++
		}
	}
	return n
}
