package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/adapter/apigroups"
	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// reloader watches the rule file by content. Polling the content (rather than file
// events) works through the symlink swaps Kubernetes uses to update a mounted
// ConfigMap. A valid new file replaces the rules and triggers a relist; an invalid one
// is logged once, counted, and the old rules keep serving.
type reloader struct {
	path     string
	current  string // hash of the rules in use
	rejected string // hash of the last file rejected, not to log it again
	parse    rules.Options
	disc     *discovery.Discoverer
	// resource receives the resource rules when metrics.k8s.io is served; nil if not.
	resource resourceRulesSetter
	// resourceMode is --resource-metrics: with auto and metrics.k8s.io not served,
	// resourceRules added by a reload need a restart.
	resourceMode string

	reloads    *prometheus.CounterVec
	lastOK     prometheus.Gauge
	lastChange prometheus.Gauge
	// restartRequired is 1 while the rules in service hold something only a restart
	// can serve.
	restartRequired prometheus.Gauge
	// warnings counts (and logs) the warnings of the rules in service.
	warnings *rules.WarningsMetric
}

func newReloader(path, hash string, parse rules.Options, disc *discovery.Discoverer, reg prometheus.Registerer) (*reloader, error) {
	r := &reloader{
		path: path, current: hash, parse: parse, disc: disc,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ebbflow_adapter", Subsystem: "config", Name: "reloads_total",
			Help: "Rule-file reloads by result (success, failure).",
		}, []string{"result"}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ebbflow_adapter", Subsystem: "config", Name: "last_reload_successful",
			Help: "1 if the rule file on disk is the one serving, 0 if the last change was rejected.",
		}),
		lastChange: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ebbflow_adapter", Subsystem: "config", Name: "last_reload_success_timestamp_seconds",
			Help: "Unix time the serving rules were loaded.",
		}),
		restartRequired: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ebbflow_adapter", Name: "restart_required",
			Help: "1 if the rule file in service has something only a restart serves (resourceRules added with --resource-metrics=auto), else 0.",
		}),
	}
	for _, c := range []prometheus.Collector{r.reloads, r.lastOK, r.lastChange, r.restartRequired} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var err error
	if r.warnings, err = rules.NewWarningsMetric(reg); err != nil {
		return nil, err
	}
	r.lastOK.Set(1)
	r.lastChange.SetToCurrentTime()
	return r, nil
}

func (r *reloader) run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			r.check(ctx)
		}
	}
}

// check reloads the file if its content changed. It reports whether new rules were
// put in service.
func (r *reloader) check(ctx context.Context) bool {
	logger := klog.FromContext(ctx)
	data, err := os.ReadFile(r.path)
	if err != nil {
		logger.Error(err, "Reading the rule file failed; keeping the current rules")
		return false
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	if hash == r.current || hash == r.rejected {
		return false
	}
	set, err := rules.ParseWith(data, r.parse)
	if err != nil {
		r.rejected = hash
		r.reloads.WithLabelValues("failure").Inc()
		r.lastOK.Set(0)
		logger.Error(err, "Rule file rejected; the previous rules keep serving", "path", r.path, "sha256", hash)
		return false
	}
	r.current, r.rejected = hash, ""
	r.disc.SetRules(set.Rules)
	r.setResourceRules(logger, set)
	r.reloads.WithLabelValues("success").Inc()
	r.lastOK.Set(1)
	r.lastChange.SetToCurrentTime()
	logRuleSet(logger, set)
	r.warnings.Set(logger, set.Warnings)
	if err := r.disc.Relist(ctx); err != nil {
		logger.Error(err, "Discovery after reload failed; retrying at the next relist")
	}
	return true
}

// resourceRulesSetter is what the reloader needs of the metrics.k8s.io provider.
type resourceRulesSetter interface {
	SetRules(*rules.ResourceRules)
}

// setResourceRules puts the new file's resourceRules in service when metrics.k8s.io
// is served; one that removes them leaves every pod and node without metrics. When
// it is not served, resourceRules added under --resource-metrics=auto need a restart
// (a group cannot be added to a running server): logged, and restart_required is 1
// until the adapter restarts or the rules are removed again.
func (r *reloader) setResourceRules(logger klog.Logger, set *rules.Set) {
	switch {
	case r.resource != nil:
		r.resource.SetRules(set.Resource)
		if set.Resource == nil {
			logger.Info("resourceRules removed: metrics.k8s.io now answers without metrics until they are restored")
		}
	case set.Resource == nil:
		r.restartRequired.Set(0)
	case r.resourceMode == apigroups.ResourceMetricsDisabled:
		logger.Info("resourceRules ignored: metrics.k8s.io is not served", "flag", "--resource-metrics=disabled")
	default:
		r.restartRequired.Set(1)
		logger.Info("resourceRules added: restart the adapter to serve metrics.k8s.io, or run it with --resource-metrics=enabled to serve them without restart")
	}
}
