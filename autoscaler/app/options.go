// Package app assembles ebbflow-autoscaler in the order Options → Validate →
// Config → Complete → Run: flags, Kubernetes and metrics clients, informers,
// the controller, leader election, and the /healthz and /metrics endpoint.
package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/ebbflow/ebbflow/autoscaler/app/settings"
	"github.com/ebbflow/ebbflow/autoscaler/controller"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// HPA modes.
const (
	// HPAModeOff leaves autoscaling/v2 HorizontalPodAutoscalers alone.
	HPAModeOff = "off"
	// HPAModeAll reconciles every HorizontalPodAutoscaler (drop-in mode, for
	// clusters whose kube-controller-manager runs without its HPA controller).
	HPAModeAll = "all"
)

// Options are ebbflow-autoscaler's command-line options. The HPA knobs have
// kube-controller-manager's names and defaults.
type Options struct {
	Kubeconfig   string
	KubeAPIQPS   float32
	KubeAPIBurst int
	// MetricsAPIQPS and MetricsAPIBurst are the client-side rate limit of
	// each metrics API client (resource, custom, external), apart from the
	// Kubernetes API budget: reads of slow metrics APIs are bounded by
	// MaxConcurrentMetricReads as well.
	MetricsAPIQPS   float32
	MetricsAPIBurst int

	SyncPeriod time.Duration
	// Settings are the evaluation's settings (tolerance, windows, delays).
	evaluation.Settings
	Workers int
	// MetricReadsPerEvaluation and MaxConcurrentMetricReads bound the
	// metric reads in flight per evaluation and over all workers.
	MetricReadsPerEvaluation int
	MaxConcurrentMetricReads int

	HPAMode     string
	Autoscalers bool
	// ClusterProportional watches nodes and ConfigMaps for
	// ClusterProportional metrics (from the first Autoscaler with one).
	ClusterProportional bool
	// MetricsDedupWindow is how long an answer from the metrics APIs is
	// reused for identical questions; negative means a third of SyncPeriod
	// (see EffectiveDedupWindow). A read never reuses an answer older than
	// its autoscaler's own sync period (metrics.WithMaxAge).
	MetricsDedupWindow time.Duration

	LeaderElection componentbaseconfig.LeaderElectionConfiguration
	// Identity names this replica in the Lease and in the events it records
	// (their reportingInstance); empty means the host name and a unique
	// suffix.
	Identity   string
	HealthAddr string
	Logs       *logsapi.LoggingConfiguration
}

// DefaultWorkers is the default of --concurrent-horizontal-pod-autoscaler-syncs:
// 20 times kube-controller-manager's 5, because an evaluation mostly waits on
// the metrics APIs (idle workers cost a goroutine each). At 100 ms per metric
// read, 100 workers evaluate about 970 autoscalers per second (5,000 every 15 s
// with p99 lag under 0.4 s; docs/benchmarks.md, issue 13), 5 workers 50.
const DefaultWorkers = 100

// NewOptions returns options with their defaults.
func NewOptions() *Options {
	return &Options{
		KubeAPIQPS:               400,
		KubeAPIBurst:             800,
		MetricsAPIQPS:            1000,
		MetricsAPIBurst:          2000,
		SyncPeriod:               15 * time.Second,
		Settings:                 evaluation.DefaultSettings(),
		Workers:                  DefaultWorkers,
		MetricReadsPerEvaluation: controller.DefaultMetricReadsPerEvaluation,
		MaxConcurrentMetricReads: controller.DefaultMaxConcurrentMetricReads,
		HPAMode:                  HPAModeOff,
		Autoscalers:              true,
		ClusterProportional:      true,
		MetricsDedupWindow:       -1,
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:       true,
			LeaseDuration:     metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline:     metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:       metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:      "leases",
			ResourceName:      "ebbflow-autoscaler",
			ResourceNamespace: "",
		},
		HealthAddr: ":8080",
		Logs:       logsapi.NewLoggingConfiguration(),
	}
}

// AddFlags registers all flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file; empty means in-cluster configuration.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second of each client of the Kubernetes API server (scale, autoscalers, events; not the metrics APIs). Every evaluation reads a /scale: 5,000 autoscalers every 15 s need 333.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of queries to the Kubernetes API server.")
	fs.Float32Var(&o.MetricsAPIQPS, "metrics-api-qps", o.MetricsAPIQPS, "Queries per second of each metrics API client (metrics.k8s.io, custom.metrics.k8s.io, external.metrics.k8s.io): 5,000 autoscalers with 3 metrics every 15 s read 1,000 per second before deduplication.")
	fs.IntVar(&o.MetricsAPIBurst, "metrics-api-burst", o.MetricsAPIBurst, "Burst of queries to each metrics API.")
	fs.DurationVar(&o.SyncPeriod, "horizontal-pod-autoscaler-sync-period", o.SyncPeriod, "How often each autoscaler is evaluated.")
	settings.AddFlags(fs, &o.Settings)
	fs.IntVar(&o.Workers, "concurrent-horizontal-pod-autoscaler-syncs", o.Workers, "Number of autoscalers evaluated concurrently (kube-controller-manager's default is 5; an evaluation mostly waits on the metrics APIs).")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Alias of --concurrent-horizontal-pod-autoscaler-syncs.")
	fs.IntVar(&o.MetricReadsPerEvaluation, "metric-reads-per-evaluation", o.MetricReadsPerEvaluation, "Metric reads one evaluation makes at once (its metrics are read concurrently, so it takes as long as the slowest read); 1 reads them one after the other as kube-controller-manager does. Decisions do not depend on it.")
	fs.IntVar(&o.MaxConcurrentMetricReads, "max-concurrent-metric-reads", o.MaxConcurrentMetricReads, "Metric reads in flight at once over all workers, to bound the load on the metrics APIs.")
	fs.StringVar(&o.HPAMode, "hpa-mode", o.HPAMode, "off: leave HorizontalPodAutoscalers alone; all: reconcile every autoscaling/v2 HorizontalPodAutoscaler (only where kube-controller-manager runs with --controllers=*,-horizontalpodautoscaling).")
	fs.BoolVar(&o.Autoscalers, "autoscalers", o.Autoscalers, "Reconcile autoscaling.ebbflow.dev Autoscalers (needs the CRD).")
	fs.BoolVar(&o.ClusterProportional, "cluster-proportional", o.ClusterProportional, "Serve ClusterProportional metrics of Autoscalers: watch nodes and ConfigMaps (only their linear and ladder keys are kept in memory) from the first Autoscaler with such a metric on. Needs list/watch on nodes and configmaps.")
	fs.DurationVar(&o.MetricsDedupWindow, "metrics-dedup-window", o.MetricsDedupWindow, "How long an answer of the metrics APIs is reused for the same question from other autoscalers; 0 only merges concurrent identical reads; negative (the default) means a third of the sync period. Must be shorter than the sync period; an autoscaler with a shorter spec.syncPeriodSeconds reuses no answer older than its own period.")
	fs.StringVar(&o.HealthAddr, "health-addr", o.HealthAddr, "Address serving /healthz and /metrics.")
	componentbaseoptions.BindLeaderElectionFlags(&o.LeaderElection, fs)
	fs.StringVar(&o.Identity, "leader-elect-identity", o.Identity, "Name of this replica in the leader election Lease (holderIdentity) and in its events (reportingInstance); empty means the host name (the pod name) and a unique suffix. Must differ between replicas.")
	logsapi.AddFlags(o.Logs, fs)
}

// Validate reports every problem with the options.
func (o *Options) Validate() []error {
	var errs []error
	if o.SyncPeriod <= 0 {
		errs = append(errs, errors.New("--horizontal-pod-autoscaler-sync-period must be positive"))
	}
	errs = append(errs, o.Settings.Validate()...)
	if o.Workers < 1 {
		errs = append(errs, errors.New("--concurrent-horizontal-pod-autoscaler-syncs must be at least 1"))
	}
	if o.KubeAPIQPS <= 0 || o.MetricsAPIQPS <= 0 {
		errs = append(errs, errors.New("--kube-api-qps and --metrics-api-qps must be positive"))
	}
	if o.MetricReadsPerEvaluation < 1 {
		errs = append(errs, errors.New("--metric-reads-per-evaluation must be at least 1"))
	}
	if o.MaxConcurrentMetricReads < 1 {
		errs = append(errs, errors.New("--max-concurrent-metric-reads must be at least 1"))
	}
	if o.HPAMode != HPAModeOff && o.HPAMode != HPAModeAll {
		errs = append(errs, fmt.Errorf("--hpa-mode must be %q or %q, not %q", HPAModeOff, HPAModeAll, o.HPAMode))
	}
	if o.HPAMode == HPAModeOff && !o.Autoscalers {
		errs = append(errs, errors.New("nothing to reconcile: --hpa-mode=off and --autoscalers=false"))
	}
	if o.SyncPeriod > 0 && o.EffectiveDedupWindow() >= o.SyncPeriod {
		errs = append(errs, errors.New("--metrics-dedup-window must be shorter than --horizontal-pod-autoscaler-sync-period"))
	}
	if o.LeaderElection.LeaderElect && o.LeaderElection.ResourceLock != "leases" {
		errs = append(errs, errors.New("--leader-elect-resource-lock must be leases"))
	}
	if len(o.Identity) > 128 {
		errs = append(errs, errors.New("--leader-elect-identity must be at most 128 characters"))
	}
	if o.HealthAddr == "" {
		errs = append(errs, errors.New("--health-addr is required"))
	}
	return errs
}

// EffectiveDedupWindow is MetricsDedupWindow, or a third of the sync period
// when it is negative.
func (o *Options) EffectiveDedupWindow() time.Duration {
	if o.MetricsDedupWindow < 0 {
		return o.SyncPeriod / 3
	}
	return o.MetricsDedupWindow
}
