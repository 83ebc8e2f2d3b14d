package provider

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/metrics"
	msapi "sigs.k8s.io/metrics-server/pkg/api"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

const apiResource = "metrics.k8s.io"

// ResourceOptions configure a ResourceProvider.
type ResourceOptions struct {
	// Prom is the default backend's client; required.
	Prom prom.Client
	// Backends are the clients of the named backends resourceRules.backend may name.
	Backends prom.Backends
	// NamespaceQueryThreshold: see Options.NamespaceQueryThreshold.
	NamespaceQueryThreshold int
	// MaxConcurrentNamespaces caps the per-namespace queries of one request that
	// spans namespaces with a query that cannot be asked across namespaces; <= 0
	// means 4. Prometheus-wide concurrency is capped by the prom.Guard besides.
	MaxConcurrentNamespaces int
	Registerer              prometheus.Registerer
}

// ResourceProvider answers metrics.k8s.io (PodMetrics, NodeMetrics) from compiled
// resourceRules, the way prometheus-adapter interprets them, with these differences:
// one query per resource (cpu, memory) per request rather than one per namespace,
// a namespace-wide query for many pods, a failed query is an error rather than an
// empty answer, samples with an empty container label are not served as a container
// named "", and memory is rounded to whole bytes.
//
// A pod is served only when both its cpu and memory queries return a sample for it;
// a container with a sample for one resource only reports 0 for the other, as
// prometheus-adapter does. A node likewise needs both. Timestamps are the oldest of
// the samples used; the window is resourceRules.window. NaN and negative values are
// served as 0, infinities dropped.
type ResourceProvider struct {
	opts    ResourceOptions
	clients prom.Backends
	rules   atomic.Pointer[rules.ResourceRules]
	metrics *apiMetrics
}

// NewResource returns a ResourceProvider serving rules (nil: nothing until SetRules).
func NewResource(opts ResourceOptions, rules *rules.ResourceRules) (*ResourceProvider, error) {
	if opts.Prom == nil || opts.Registerer == nil {
		return nil, errors.New("provider: prom and registerer are required")
	}
	if opts.NamespaceQueryThreshold == 0 {
		opts.NamespaceQueryThreshold = DefaultNamespaceQueryThreshold
	}
	if opts.MaxConcurrentNamespaces <= 0 {
		opts.MaxConcurrentNamespaces = 4
	}
	m, err := newAPIMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	p := &ResourceProvider{opts: opts, clients: prom.WithDefault(opts.Prom, opts.Backends), metrics: m}
	p.rules.Store(rules)
	return p, nil
}

// SetRules replaces the resource rules; requests already running keep the old ones.
// nil serves no metrics (every pod and node is left out).
func (p *ResourceProvider) SetRules(rules *rules.ResourceRules) { p.rules.Store(rules) }

// PodMetrics returns the metrics of the given pods that have samples, in the order
// given. Errors are API status errors: 500 with a generic message for any failure
// behind the adapter, whose detail is logged with ctx's logger.
func (p *ResourceProvider) PodMetrics(ctx context.Context, pods []*metav1.PartialObjectMetadata) (_ []metrics.PodMetrics, err error) {
	start := time.Now()
	defer func() { p.metrics.observe(apiResource, outcomeOf(err), time.Since(start)) }()
	rules := p.rules.Load()
	if rules == nil || len(pods) == 0 {
		return []metrics.PodMetrics{}, nil
	}
	var cpu, mem containerSamples
	err = runBoth(
		func() (err error) { cpu, err = p.podSamples(ctx, rules.CPU, pods); return err },
		func() (err error) { mem, err = p.podSamples(ctx, rules.Memory, pods); return err },
	)
	if err != nil {
		return nil, err
	}
	out := assemblePods(pods, cpu, mem, rules.Window, metav1.Now())
	klog.FromContext(ctx).V(4).Info("Served pod metrics", "pods", len(pods), "served", len(out))
	return out, nil
}

// NodeMetrics returns the metrics of the given nodes that have samples, in the order
// given. Errors are as for PodMetrics.
func (p *ResourceProvider) NodeMetrics(ctx context.Context, nodes []*corev1.Node) (_ []metrics.NodeMetrics, err error) {
	start := time.Now()
	defer func() { p.metrics.observe(apiResource, outcomeOf(err), time.Since(start)) }()
	rules := p.rules.Load()
	if rules == nil || len(nodes) == 0 {
		return []metrics.NodeMetrics{}, nil
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	var cpu, mem map[string]sampleValue
	err = runBoth(
		func() (err error) { cpu, err = p.nodeSamples(ctx, rules.CPU, names); return err },
		func() (err error) { mem, err = p.nodeSamples(ctx, rules.Memory, names); return err },
	)
	if err != nil {
		return nil, err
	}
	return assembleNodes(nodes, cpu, mem, rules.Window, metav1.Now()), nil
}

// runBoth runs a and b concurrently and returns the first error of a, else of b.
func runBoth(a, b func() error) error {
	done := make(chan error, 1)
	go func() { done <- b() }()
	errA := a()
	errB := <-done
	if errA != nil {
		return errA
	}
	return errB
}

// renderError turns a failure to render a resource query into a generic 500.
func renderError(ctx context.Context, err error) error {
	logError(ctx, err, "Rendering the resource metrics query failed")
	return apierrors.NewInternalError(errInternal)
}

// Getter adapts p to metrics-server's MetricsGetter, whose methods take no context:
// every call runs under ctx (for its logger and cancellation at shutdown) with at most
// timeout (<= 0: no limit beyond ctx).
func (p *ResourceProvider) Getter(ctx context.Context, timeout time.Duration) msapi.MetricsGetter {
	return boundGetter{p: p, ctx: ctx, timeout: timeout}
}

type boundGetter struct {
	p       *ResourceProvider
	ctx     context.Context
	timeout time.Duration
}

var _ msapi.MetricsGetter = boundGetter{}

func (g boundGetter) context() (context.Context, context.CancelFunc) {
	if g.timeout <= 0 {
		return context.WithCancel(g.ctx)
	}
	return context.WithTimeout(g.ctx, g.timeout)
}

// GetPodMetrics implements msapi.PodMetricsGetter.
func (g boundGetter) GetPodMetrics(pods ...*metav1.PartialObjectMetadata) ([]metrics.PodMetrics, error) {
	ctx, cancel := g.context()
	defer cancel()
	return g.p.PodMetrics(ctx, pods)
}

// GetNodeMetrics implements msapi.NodeMetricsGetter.
func (g boundGetter) GetNodeMetrics(nodes ...*corev1.Node) ([]metrics.NodeMetrics, error) {
	ctx, cancel := g.context()
	defer cancel()
	return g.p.NodeMetrics(ctx, nodes)
}
