package server

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/adapter/ruleset"
)

// Run serves until ctx is done: it logs what was built, then starts the object
// and node caches, discovery and the rule-file reloader alongside the API server,
// all stopping with ctx. It builds nothing.
func (c CompletedConfig) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	o := c.opts
	logRuleSet(logger, c.rules)
	if len(c.backends) > 0 {
		logger.Info("Named Prometheus backends", "file", o.BackendsFile, "backends", c.backends)
	}
	for _, note := range o.Transport.Ignored() {
		logger.Info("Prometheus connection option ignored", "reason", note)
	}
	logAPIs(logger, c.apis, o.ResourceMetrics, c.rules)

	stop := context.AfterFunc(ctx, c.cancelBase)
	defer stop()
	if err := c.lister.Start(ctx, schema.GroupResource{Resource: "pods"}); err != nil {
		return err
	}
	if c.resAPI != nil {
		c.resAPI.start(ctx)
	}
	go c.disc.Run(ctx, o.RelistInterval)
	go c.reload.run(ctx, o.ConfigCheckInterval)
	return c.server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// logRuleSet logs what a rule set serves and what it does not.
func logRuleSet(logger klog.Logger, set *ruleset.Set) {
	custom, external := set.Counts()
	logger.Info("Loaded rule file", "customRules", custom, "externalRules", external, "sha256", set.Hash)
	for _, w := range set.Warnings {
		logger.Info("Rule file warning", "warning", w.Error())
	}
	if set.Resource != nil {
		logger.Info("Loaded resourceRules", "window", set.Resource.Window)
	}
}
