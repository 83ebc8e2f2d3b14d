package app

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// The HPA knobs have kube-controller-manager's defaults except the worker
// count (100, not 5: see DefaultWorkers).
func TestDefaultsAreKubeControllerManagers(t *testing.T) {
	o := parse(t)
	if errs := o.Validate(); len(errs) != 0 {
		t.Fatalf("defaults invalid: %v", errs)
	}
	if o.SyncPeriod != 15*time.Second || o.Tolerance != 0.1 || o.DownscaleStabilization != 5*time.Minute ||
		o.CPUInitializationPeriod != 5*time.Minute || o.InitialReadinessDelay != 30*time.Second || o.Workers != 100 {
		t.Errorf("defaults = %+v", o)
	}
	if o.EffectiveDedupWindow() != 5*time.Second {
		t.Errorf("dedup window = %v, want a third of the sync period", o.EffectiveDedupWindow())
	}
	if o := parse(t, "--horizontal-pod-autoscaler-sync-period=3s"); len(o.Validate()) != 0 || o.EffectiveDedupWindow() != time.Second {
		t.Errorf("a short sync period: window %v, errors %v", o.EffectiveDedupWindow(), o.Validate())
	}
	if o := parse(t, "--metrics-dedup-window=0"); o.EffectiveDedupWindow() != 0 {
		t.Errorf("explicit 0: window %v", o.EffectiveDedupWindow())
	}
	if o.HPAMode != HPAModeOff || o.HealthAddr != ":8080" || !o.LeaderElection.LeaderElect {
		t.Errorf("defaults = %+v", o)
	}
}

func TestFlags(t *testing.T) {
	o := parse(t, "--workers=9", "--hpa-mode=all", "--horizontal-pod-autoscaler-sync-period=30s",
		"--horizontal-pod-autoscaler-tolerance=0.05", "--leader-elect=false", "--leader-elect-resource-namespace=x")
	if o.Workers != 9 || o.HPAMode != HPAModeAll || o.SyncPeriod != 30*time.Second || o.Tolerance != 0.05 ||
		o.LeaderElection.LeaderElect || o.LeaderElection.ResourceNamespace != "x" {
		t.Errorf("parsed = %+v", o)
	}
	if o := parse(t, "--concurrent-horizontal-pod-autoscaler-syncs=3"); o.Workers != 3 {
		t.Errorf("workers = %d", o.Workers)
	}
	o = parse(t, "--metric-reads-per-evaluation=1", "--max-concurrent-metric-reads=20")
	if o.MetricReadsPerEvaluation != 1 || o.MaxConcurrentMetricReads != 20 {
		t.Errorf("metric read bounds = %d, %d; want 1, 20", o.MetricReadsPerEvaluation, o.MaxConcurrentMetricReads)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--hpa-mode=some"}, `--hpa-mode must be "off" or "all"`},
		{[]string{"--workers=0"}, "at least 1"},
		{[]string{"--metric-reads-per-evaluation=0"}, "--metric-reads-per-evaluation must be at least 1"},
		{[]string{"--max-concurrent-metric-reads=-3"}, "--max-concurrent-metric-reads must be at least 1"},
		{[]string{"--horizontal-pod-autoscaler-sync-period=0s"}, "sync-period must be positive"},
		{[]string{"--horizontal-pod-autoscaler-tolerance=-1"}, "tolerance must not be negative"},
		{[]string{"--metrics-dedup-window=15s"}, "shorter than"},
		{[]string{"--autoscalers=false"}, "nothing to reconcile"},
		{[]string{"--horizontal-pod-autoscaler-initial-readiness-delay=-1s"}, "readiness-delay must not be negative"},
	}
	for _, tc := range cases {
		errs := parse(t, tc.args...).Validate()
		found := false
		for _, err := range errs {
			found = found || strings.Contains(err.Error(), tc.want)
		}
		if !found {
			t.Errorf("%v: errors %v, want one containing %q", tc.args, errs, tc.want)
		}
	}
}
