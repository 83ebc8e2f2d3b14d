package cli

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/autoscaler/app/settings"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

// simulateOptions are the flags of `ebbflow simulate`.
type simulateOptions struct {
	files           []string
	rules           string
	backendsFile    string
	conn            prom.ConnectionOptions
	settings        evaluation.Settings
	nanValues       string
	since           time.Duration
	start, end      string
	step            time.Duration
	output          string
	plot            string
	podStartup      time.Duration
	historyRefresh  time.Duration
	warmup          time.Duration
	initialReplicas int32
	actualQuery     string
	namespace       string
	podNames        string
	podRequests     string
	// requests is --pod-requests parsed by validate; nil when not given.
	requests corev1.ResourceList
	// now is the clock (tests set it).
	now func() time.Time
}

const simulateLong = `simulate replays Prometheus history through ebbflow-autoscaler's evaluation
(the same proposals, behaviors, stabilization, tolerances and extensions,
schedules included) on a simulated clock, one evaluation every --step (or every
spec.syncPeriodSeconds when longer, and at a schedule's start, as the
controller), and shows what each spec would have done.

Each metric of the spec is translated to PromQL by the rules of --rules, exactly
as ebbflow-adapter would (same discovery, same queries), and read with one
query_range over the whole range (chunked for long ranges).

The load model, fed back with the simulated replica count:
  - External and Object metrics are replayed as recorded (they do not depend on
    the replica count).
  - Pods metrics conserve the load: the recorded per-pod values summed over the
    target's pods is the load; each ready simulated pod reports that load
    divided by the ready simulated pods. A new pod is ready --pod-startup after
    it was created; until then it has no sample (a missing pod, as upstream
    counts them).
  - Resource and ContainerResource metrics (cpu, memory) conserve the load the
    same way. The history is read through the rule file's resourceRules: the
    containerQuery, rendered by ebbflow-adapter's code for the namespace's pods,
    summed per pod over its containers (only the named container for
    ContainerResource), then over the target's pods. Samples carry
    resourceRules.window, so new pods' cpu is distrusted as the controller does.
    A Utilization target needs the pods' requests: the sum of the containers'
    requests of the scale target's Deployment, StatefulSet or ReplicaSet given
    with -f, or --pod-requests; without them the replay refuses that metric.
  - A step without a value is a metric the metrics API could not serve: the
    evaluation treats it as the controller does (no scale-down on a failed
    metric; treatMissingAs: Zero reads 0). Never a silent zero.

With --prometheus-backends-file, a rule's backend field sends its discovery and
queries to that backend, as in ebbflow-adapter; --prometheus-url and the auth
flags are the backend named default. A rule naming an unknown backend is an error.

The actual replicas (kube-state-metrics' kube_deployment_status_replicas, or
--actual-query) are shown beside the simulated ones when Prometheus has them.`

func newSimulateCommand() *cobra.Command {
	o := &simulateOptions{
		conn:            prom.NewConnectionOptions(""),
		settings:        evaluation.DefaultSettings(),
		nanValues:       rulefile.NaNZero,
		since:           24 * time.Hour,
		step:            15 * time.Second,
		output:          "table",
		podStartup:      simulate.DefaultPodStartup,
		historyRefresh:  evaluation.HistoryRefresh,
		initialReplicas: -1,
		now:             time.Now,
	}
	cmd := &cobra.Command{
		Use:   "simulate -f SPEC.yaml --rules RULES.yaml --prometheus-url URL [--since 24h | --start T --end T]",
		Short: "Replay Prometheus history through the autoscaler: what would this spec have done?",
		Long:  simulateLong,
		Example: `  ebbflow simulate -f web-hpa.yaml --rules rules.yaml --prometheus-url http://localhost:9090 --since 24h
  ebbflow simulate -f web-hpa.yaml -f web-deployment.yaml --rules rules.yaml --prometheus-url http://localhost:9090 --since 6h
  ebbflow simulate -f current.yaml -f tuned.yaml --rules rules.yaml --prometheus-url http://localhost:9090 \
      --start 2026-11-22T08:00:00Z --end 2026-11-22T20:00:00Z -o json --plot replay.png`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if errs := o.validate(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			return o.run(cmd)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&o.files, "filename", "f", nil, "Autoscaler or autoscaling/v2 HorizontalPodAutoscaler manifest; repeat (or put several documents in one file) to compare specs on the same history.")
	fs.StringVar(&o.rules, "rules", "", "ebbflow-adapter rule file serving the specs' metrics (prometheus-adapter format).")
	fs.StringVar(&o.backendsFile, "prometheus-backends-file", "", "YAML file of named Prometheus backends, as ebbflow-adapter's flag: a rule's backend field sends its queries there; --prometheus-url and the auth flags are the backend named default.")
	fs.StringVar(&o.nanValues, "nan-values", o.nanValues, "What a NaN sample becomes, as ebbflow-adapter's flag: zero or drop (a rule's nanValues overrides it).")
	fs.DurationVar(&o.since, "since", o.since, "Replay the last duration (ignored with --start).")
	fs.StringVar(&o.start, "start", "", "Start of the range (RFC 3339, e.g. 2026-11-22T08:00:00Z).")
	fs.StringVar(&o.end, "end", "", "End of the range (RFC 3339); default now.")
	fs.DurationVar(&o.step, "step", o.step, "Time between two steps of the replay, the controller's sync period; not given, the shortest spec.syncPeriodSeconds of the specs when shorter. A spec with a longer syncPeriodSeconds is evaluated at that period.")
	fs.StringVarP(&o.output, "output", "o", o.output, "Output format: table (summary and changes) or json (every step).")
	fs.StringVar(&o.plot, "plot", "", "Also write a PNG plot (metric against target, actual and simulated replicas per spec) to this file.")
	fs.DurationVar(&o.podStartup, "pod-startup", o.podStartup, "Time a new simulated pod takes to become ready.")
	fs.DurationVar(&o.historyRefresh, "history-refresh", o.historyRefresh, "How often a forecast's history is read again, as ebbflow-autoscaler does; between reads the forecast has the last read and the metric's current value. 0: the history up to each step.")
	fs.DurationVar(&o.warmup, "warmup", 0, "Also replay this much history before the range, neither shown nor scored: the autoscaler's state and the forecasts' past seasons (e.g. 169h: a daily forecast's 4 seasons and the 3 days of its backtest, as ebbflow-autoscaler reads them).")
	fs.Int32Var(&o.initialReplicas, "initial-replicas", o.initialReplicas, "Replicas before the first evaluation; -1: the actual replicas at the start when Prometheus has them, else minReplicas (at least 1).")
	fs.StringVar(&o.actualQuery, "actual-query", "", "PromQL of the actual replica count (default: kube-state-metrics' replicas of the scale target).")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "Namespace of the specs (default: their metadata.namespace, else default).")
	fs.StringVar(&o.podRequests, "pod-requests", "", "What each pod of the scale target requests, e.g. cpu=250m,memory=256Mi: the denominator of Utilization targets (default: the sum of the containers' requests of the Deployment, StatefulSet or ReplicaSet given with -f).")
	fs.StringVar(&o.podNames, "pod-name-regex", "", "Names of the target's pods, for Pods metrics (default: from scaleTargetRef, e.g. ^web-[a-z0-9]+-[a-z0-9]+$ for Deployment web).")
	o.conn.AddFlags(fs)
	settings.AddFlags(fs, &o.settings)
	return cmd
}

// validate reports every problem with the flags.
func (o *simulateOptions) validate() []error {
	var errs []error
	if len(o.files) == 0 {
		errs = append(errs, errors.New("-f is required: an Autoscaler or HorizontalPodAutoscaler manifest"))
	}
	if o.rules == "" {
		errs = append(errs, errors.New("--rules is required: the rule file that serves the specs' metrics"))
	}
	if o.conn.PrometheusURL == "" {
		errs = append(errs, errors.New("--prometheus-url is required"))
	} else {
		errs = append(errs, o.conn.Validate()...)
	}
	errs = append(errs, o.settings.Validate()...)
	if o.step <= 0 {
		errs = append(errs, errors.New("--step must be positive"))
	}
	if o.start == "" && o.since <= 0 {
		errs = append(errs, errors.New("--since must be positive"))
	}
	if o.output != "table" && o.output != "json" {
		errs = append(errs, fmt.Errorf("-o must be table or json, not %q", o.output))
	}
	if o.nanValues != rulefile.NaNZero && o.nanValues != rulefile.NaNDrop {
		errs = append(errs, fmt.Errorf("--nan-values must be %q or %q, not %q", rulefile.NaNZero, rulefile.NaNDrop, o.nanValues))
	}
	if o.podStartup < 0 {
		errs = append(errs, errors.New("--pod-startup must not be negative"))
	}
	if o.historyRefresh < 0 {
		errs = append(errs, errors.New("--history-refresh must not be negative"))
	}
	if o.warmup < 0 {
		errs = append(errs, errors.New("--warmup must not be negative"))
	}
	if o.initialReplicas < -1 {
		errs = append(errs, errors.New("--initial-replicas must be -1 (automatic) or a replica count"))
	}
	if o.podRequests != "" {
		var err error
		if o.requests, err = parsePodRequests(o.podRequests); err != nil {
			errs = append(errs, err)
		}
	}
	if o.podNames != "" {
		if _, err := regexp.Compile(o.podNames); err != nil {
			errs = append(errs, fmt.Errorf("--pod-name-regex: %w", err))
		}
	}
	return errs
}
