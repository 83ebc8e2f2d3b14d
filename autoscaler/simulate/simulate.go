package simulate

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Missing marks a step without a recorded value.
const Missing int64 = math.MinInt64

// MaxSteps bounds one replay and so its memory (about 150 bytes a step and
// metric): 1,000,000 steps are 173 days at 15 s.
const MaxSteps = 1_000_000

// DefaultPodStartup is how long a new simulated pod takes to become ready.
const DefaultPodStartup = 30 * time.Second

// ErrNoSample is why a metric failed at a step without a recorded value.
var ErrNoSample = errors.New("no sample recorded at this time")

// Config is the replay's clock and the controller settings it runs with.
type Config struct {
	// Start is the time of the first evaluation; one step runs every Step,
	// Steps times. A step evaluates when the spec is due: every step, or
	// every spec.syncPeriodSeconds when that is longer (sooner when a
	// schedule's floor changes; Spec.NextEvaluation); the steps between only
	// observe.
	Start time.Time
	Step  time.Duration
	Steps int
	// InitialReplicas is the replica count before the first evaluation (all
	// ready).
	InitialReplicas int32
	// PodStartup is how long a new pod takes to become ready.
	PodStartup time.Duration
	// Namespace names the autoscaler's namespace in metric errors.
	Namespace string
	// Template is what every simulated pod requests (containers, init
	// containers, pod-level requests, overhead), the denominator of a
	// Utilization target; nil when unknown, which only Utilization targets
	// cannot do without.
	Template *replicas.Pod
	// ResourceWindow is the window the metrics.k8s.io API reports with every
	// Resource sample (resourceRules.window): within the cpu initialization
	// period the controller distrusts a cpu sample whose window started before
	// the pod became ready.
	ResourceWindow time.Duration
	// HistoryRefresh is how often the history of a metric's forecast is read
	// again, as ebbflow-autoscaler does (evaluation.HistoryRefresh): between
	// two reads the forecast has the history of the last read, and the
	// metric's value at the step keeps the recent level current (a Pods
	// metric's summed over the ready pods); the history is also at the
	// controller's step (one minute for a daily season, five for a weekly
	// one) when that is a multiple of Step. 0: the history up to each
	// evaluation, at Step.
	HistoryRefresh time.Duration
	// Settings are the controller's settings (kube-controller-manager's
	// flags).
	evaluation.Settings
}

// Series is one metric's recorded history on the step grid, in milli-units:
// Values[i] is the value at Start+i×Step (Missing when there is none). For a
// Pods, Resource or ContainerResource metric it is the load (the per-pod
// values summed over the pods that existed); for an Object metric the value; for an External metric the sum of
// its series. For a ClusterProportional metric Sizes is the cluster's size
// at each step instead (Nodes < 0 when unknown), as the controller's node
// informer would have counted it.
type Series struct {
	Values []int64
	Sizes  []proportional.ClusterSize
}

// Step is one evaluation of the replay.
type Step struct {
	Time time.Time
	// Replicas is the count after the evaluation (what it wrote, or kept).
	Replicas int32
	// Current and Ready are the replicas and the ready pods it saw.
	Current int32
	Ready   int32
	// Values has one entry per metric: the value the evaluation read, in
	// milli-units (the per-pod value for a Pods, Resource or ContainerResource
	// metric), Missing when none.
	Values []int64
	// Ratios are the metrics' usage ratios (value over target; NaN unknown).
	Ratios []float64
	// Rescaled is true when the evaluation wrote a new count.
	Rescaled bool
	// Reason explains a rescale, or why the evaluation could not decide.
	Reason string
	// Failed is true when the metrics allowed no evaluation.
	Failed bool
	// UnderProvisioned is true when some metric's usage ratio exceeded the
	// scale-up tolerance.
	UnderProvisioned bool
	// Needed is the ready pods the recorded load needed (see Score), -1
	// when no metric tells.
	Needed int32
}

// Result is a replay: every step and its summary.
type Result struct {
	Steps   []Step
	Summary Summary
}

// Validate reports the first problem with cfg, spec and series (one series
// per HPA metric of spec, then one per ClusterProportional metric, each Steps
// long).
func Validate(cfg Config, spec *evaluation.Spec, series []Series) error {
	switch {
	case cfg.Step <= 0:
		return errors.New("step must be positive")
	case cfg.Steps <= 0:
		return errors.New("the range holds no step")
	case cfg.Steps > MaxSteps:
		return fmt.Errorf("%d steps exceed the limit of %d: use a longer step or a shorter range", cfg.Steps, MaxSteps)
	case cfg.InitialReplicas < 0:
		return errors.New("initial replicas must not be negative")
	case len(series) != len(spec.HPA.Metrics)+len(spec.Proportional):
		return fmt.Errorf("%d series for %d metrics", len(series), len(spec.HPA.Metrics)+len(spec.Proportional))
	case len(spec.HPA.Metrics)+len(spec.Proportional) == 0:
		return errors.New("the spec has no metric to replay")
	}
	if err := ValidateMetrics(spec, cfg.Template); err != nil {
		return err
	}
	for i := range spec.HPA.Metrics {
		if len(series[i].Values) != cfg.Steps {
			return fmt.Errorf("spec.metrics[%d]: %d values for %d steps", i, len(series[i].Values), cfg.Steps)
		}
	}
	for j, p := range spec.Proportional {
		if s := series[len(spec.HPA.Metrics)+j]; len(s.Sizes) != cfg.Steps {
			return fmt.Errorf("spec.metrics[%d]: %d cluster sizes for %d steps", p.Index, len(s.Sizes), cfg.Steps)
		}
	}
	return nil
}

// ValidateMetrics reports the first metric of spec that cannot be replayed
// with pods requesting what template says (nil: unknown): an invalid metric,
// or a Utilization target whose requests are unknown. Callers check it
// before reading any history.
func ValidateMetrics(spec *evaluation.Spec, template *replicas.Pod) error {
	for _, p := range spec.Proportional {
		if err := ReplayableProportional(p); err != nil {
			return err
		}
	}
	if err := validateForecast(spec); err != nil {
		return err
	}
	for i, m := range spec.HPA.Metrics {
		kind, err := evaluation.Classify(m)
		if err != nil {
			return fmt.Errorf("spec.metrics[%d]: %w", i, err)
		}
		if isResource(m) {
			if _, err := perPodTarget(kind, m, template); err != nil {
				return fmt.Errorf("spec.metrics[%d]: %w", i, err)
			}
		}
	}
	return nil
}

// ReplayableProportional reports why a ClusterProportional metric cannot be
// replayed from the cluster's recorded size (nil when it can): its
// parameters come from a ConfigMap, whose history is unknown, or it counts
// only the nodes of a selector, which the recorded node series do not tell
// apart.
func ReplayableProportional(p evaluation.ProportionalSource) error {
	switch {
	case p.Source.ConfigMapRef != nil:
		return fmt.Errorf("spec.metrics[%d] (ClusterProportional): its parameters come from ConfigMap %s, whose history is unknown; cannot replay it", p.Index, p.Source.ConfigMapRef.Name)
	case p.Source.NodeSelector != nil:
		return fmt.Errorf("spec.metrics[%d] (ClusterProportional): it counts the nodes of a nodeSelector, which the recorded node series cannot tell apart; cannot replay it", p.Index)
	}
	return nil
}

// Run replays series through spec's evaluation, one evaluation every
// cfg.Step, and returns every step with the summary.
func Run(cfg Config, spec evaluation.Spec, series []Series) (Result, error) {
	if err := Validate(cfg, &spec, series); err != nil {
		return Result{}, err
	}
	if cfg.PodStartup < 0 {
		cfg.PodStartup = 0
	}
	r := newReplay(cfg, spec, series)
	steps := make([]Step, cfg.Steps)
	for i := range steps {
		steps[i] = r.step(i)
	}
	sum := Summarize(steps, cfg.Step)
	sum.Score = ScoreOf(steps, cfg.Step, cfg.PodStartup, evaluation.MinReplicas(&spec.HPA), spec.HPA.MaxReplicas)
	return Result{Steps: steps, Summary: sum}, nil
}
