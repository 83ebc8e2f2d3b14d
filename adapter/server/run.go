package server

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
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

	// metrics.k8s.io requests run under the context Complete made: it ends with ctx,
	// and when Run returns.
	stop := context.AfterFunc(ctx, c.cancelBase)
	defer func() { stop(); c.cancelBase() }()
	if err := c.lister.Start(ctx, schema.GroupResource{Resource: "pods"}); err != nil {
		return err
	}
	if c.resAPI != nil {
		c.resAPI.start(ctx)
	}
	go c.disc.Run(ctx, o.RelistInterval)
	go c.reload.run(ctx, o.ConfigCheckInterval)
	primeClientCA(ctx, c.server.GenericAPIServer.SecureServingInfo)
	return c.server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// primeClientCA loads the client CAs once before the server serves. The CAs of
// the kube-system/extension-apiserver-authentication ConfigMap are otherwise
// loaded by an informer started with the server, and a request that arrives
// first (kube-apiserver checks a restarted adapter at once) finds no CA to
// verify its client certificate against: it is anonymous and forbidden, and
// kube-apiserver marks the APIServices unavailable until its next check. A
// failure is logged; the informer keeps trying, as before.
func primeClientCA(ctx context.Context, s *genericapiserver.SecureServingInfo) {
	if s == nil || s.ClientCA == nil {
		return
	}
	r, ok := s.ClientCA.(dynamiccertificates.ControllerRunner)
	if !ok {
		return
	}
	if err := r.RunOnce(ctx); err != nil {
		klog.FromContext(ctx).Info("Client CAs not loaded before serving; loading them in the background", "err", err)
	}
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
