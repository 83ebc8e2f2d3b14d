package server

import (
	"bytes"
	"context"
	"encoding/pem"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

// Run serves until ctx is done: it logs what was built, then starts the object
// and node caches, discovery and the rule-file reloader alongside the API server,
// all stopping with ctx. It builds nothing.
func (c CompletedConfig) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	o := c.opts
	logRuleSet(logger, c.rules)
	c.reload.warnings.Set(logger, c.rules.Warnings)
	if len(c.backends) > 0 {
		logger.Info("Named Prometheus backends", "file", o.BackendsFile, "backends", c.backends)
	}
	for _, note := range o.Transport.Ignored() {
		logger.Info("Prometheus connection option ignored", "reason", note)
	}
	logAPIs(logger, c.apis, o.ResourceMetrics, c.rules)
	logUpstreams(logger, c.upstreams)

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
	if c.upstreams != nil {
		go c.upstreams.Run(ctx, o.RelistInterval)
	}
	go c.reload.run(ctx, o.ConfigCheckInterval)
	primeClientCA(ctx, c.server.GenericAPIServer.SecureServingInfo)
	return c.server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// primeClientCA loads the client CAs before the server serves. The CAs of the
// kube-system/extension-apiserver-authentication ConfigMap (client-ca-file and
// requestheader-client-ca-file) are loaded by informers, and a connection made
// before they are (kube-apiserver checks a restarted adapter at once, and
// keeps the connection) finds no CA to verify its client certificate against:
// it stays anonymous and forbidden, and kube-apiserver marks the APIServices
// unavailable. So the CA controllers start here (the server's own start of
// them then finds them running), and serving waits until the bundle holds both
// CAs, or one that has not changed for caBundleSettle, at most caBundleWait.
// Without a bundle by then the server serves anyway and logs why.
func primeClientCA(ctx context.Context, s *genericapiserver.SecureServingInfo) {
	if s == nil || s.ClientCA == nil {
		return
	}
	r, ok := s.ClientCA.(dynamiccertificates.ControllerRunner)
	if !ok {
		return
	}
	go r.Run(ctx, 1)
	if !waitForCABundle(ctx, s.ClientCA.CurrentCABundleContent, caBundleWait, caBundleSettle) {
		klog.FromContext(ctx).Info("Client CAs not loaded before serving; loading them in the background", "waited", caBundleWait)
	}
}

const (
	caBundleWait   = 10 * time.Second
	caBundleSettle = time.Second
)

// waitForCABundle polls content until it holds two certificates or one
// certificate that has not changed for settle; false when wait ends first.
func waitForCABundle(ctx context.Context, content func() []byte, wait, settle time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last []byte
	var since time.Time
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		cur := content()
		switch n := countCertificates(cur); {
		case n >= 2:
			return true
		case n == 1 && bytes.Equal(cur, last) && time.Since(since) >= settle:
			return true
		case !bytes.Equal(cur, last):
			last, since = cur, time.Now()
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// countCertificates counts the PEM certificate blocks of a CA bundle.
func countCertificates(bundle []byte) int {
	n := 0
	for {
		var b *pem.Block
		if b, bundle = pem.Decode(bundle); b == nil {
			return n
		}
		if b.Type == "CERTIFICATE" {
			n++
		}
	}
}

// logRuleSet logs what a rule set serves and what it does not.
func logRuleSet(logger klog.Logger, set *rules.Set) {
	custom, external := set.Counts()
	logger.Info("Loaded rule file", "customRules", custom, "externalRules", external, "sha256", set.Hash)
	if set.Resource != nil {
		logger.Info("Loaded resourceRules", "window", set.Resource.Window)
	}
}
