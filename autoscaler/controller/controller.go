// Package controller reconciles autoscalers as kube-controller-manager
// v1.37's HorizontalPodAutoscaler controller does, and does only I/O: for
// each object it observes (observe.go: the target's /scale, the pods its
// selector matches, every metric's values through package metrics, the
// cluster's size), calls evaluation.Evaluate, which decides everything and
// acts through the write the controller hands it (sync.go: act writes
// /scale) as its last stage, and persists (sync.go: records the events, and
// the object's Kind stores status, decision record and scale events).
//
// The objects come from Kinds (kind.go): HPAKind for autoscaling/v2
// HorizontalPodAutoscalers (drop-in mode) and AutoscalerKind
// (autoscaler.go) for autoscaling.ebbflow.dev Autoscalers. Queue keys are
// "<Kind>/<namespace>/<name>".
//
// Layout: controller.go (Controller, New, Run, workers, informer handlers,
// due times for the lag metric), sync.go (one evaluation top to bottom, the
// per-key evaluation.Memory, the resource version of the last write and the period
// after which the key is due again), observe.go (the reads, bounded in
// concurrency), kind.go and autoscaler.go (the kinds), pods.go (pod label
// index, ambiguous selector detection), cluster.go (nodes and ConfigMaps of
// ClusterProportional metrics, watched from the first object that has
// one), history.go (the forecasts' histories, read
// only for a spec with a forecast), selfmetrics.go (the controller's
// Prometheus metrics).
//
// Each object is evaluated once per sync period (its spec.syncPeriodSeconds,
// else --horizontal-pod-autoscaler-sync-period; sooner when a schedule's
// floor changes); its evaluation.Memory is kept by the process (the scale events are also
// stored on the object, for a takeover) and is dropped when the object is
// deleted.
package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
)

// Config holds the knobs of kube-controller-manager's HPA controller.
type Config struct {
	// SyncPeriod is how often each object is evaluated.
	SyncPeriod time.Duration
	// Tolerance is the global usage-ratio tolerance.
	Tolerance float64
	// DownscaleStabilization is the window of the fixed rules and the
	// default scale-down window of behaviors.
	DownscaleStabilization  time.Duration
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
	// Workers is the number of objects evaluated at once.
	Workers int
	// MetricReadsPerEvaluation bounds the metric reads one evaluation has
	// in flight (0: DefaultMetricReadsPerEvaluation; 1: one after the
	// other, as upstream).
	MetricReadsPerEvaluation int
	// MaxConcurrentMetricReads bounds the metric reads in flight over all
	// workers (0: DefaultMaxConcurrentMetricReads).
	MaxConcurrentMetricReads int
	// Identity is this replica's leader-election identity, stamped on every
	// decision record the controller stores (evaluatedBy); at most
	// v1alpha1.MaxEvaluatedBy bytes.
	Identity string
}

// Deps are the controller's collaborators. All are required except Clock
// (default: the real clock).
type Deps struct {
	Scales  scale.ScalesGetter
	Mapper  apimeta.RESTMapper
	Metrics metrics.Client
	// Pods is the shared pod informer; New adds an index to it, so it must
	// not have been started yet.
	Pods     cache.SharedIndexInformer
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	// SelfMetrics records the controller's own metrics (see NewSelfMetrics).
	SelfMetrics *SelfMetrics
	// Cluster returns the informers ClusterProportional metrics read, not
	// started (optional: nil turns those metrics into errors). The
	// controller calls it when it first evaluates an object with such a
	// metric, adds its event handlers, starts them and waits for their
	// caches (at most one sync period per evaluation; until they sync,
	// those metrics fail): until then no Node or ConfigMap is listed or
	// cached.
	Cluster func() (ClusterInformers, error)
	// Lease bounds every evaluation under leader election (optional: nil
	// without leader election).
	Lease LeaseFence
}

// LeaseFence tells until when this replica's writes are sure to reach the API
// server before any other replica can hold the leader election Lease.
type LeaseFence interface {
	// ValidUntil is that time; the zero time when the Lease is not held.
	ValidUntil() time.Time
}

// Controller reconciles the objects of its kinds.
type Controller struct {
	cfg       Config
	deps      Deps
	kinds     map[string]Kind
	queue     workqueue.TypedRateLimitingInterface[string]
	due       dueTimes
	memory    *memoryStore
	tracker   *selectorTracker
	writes    *writeTracker
	podSource *podSource
	cluster   *lazyCluster
	reads     *readLimiter
	periods   *periods
	histories historyCache // history.go
}

// New returns a controller over kinds and registers its event handlers on
// their informers. Start the informers, then call Run.
func New(cfg Config, deps Deps, kinds ...Kind) (*Controller, error) {
	if len(cfg.Identity) > v1alpha1.MaxEvaluatedBy {
		return nil, fmt.Errorf("controller config: Identity is %d bytes long, at most %d (it is stored in decision records' evaluatedBy)", len(cfg.Identity), v1alpha1.MaxEvaluatedBy)
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	c := &Controller{
		cfg:   cfg,
		deps:  deps,
		kinds: make(map[string]Kind, len(kinds)),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "autoscaler", Clock: deps.Clock},
		),
		due:     dueTimes{at: map[string]time.Time{}},
		memory:  newMemoryStore(),
		tracker: newSelectorTracker(),
		writes:  newWriteTracker(),
		reads:   newReadLimiter(cfg.MetricReadsPerEvaluation, cfg.MaxConcurrentMetricReads, deps.SelfMetrics),
		periods: newPeriods(),
	}
	pods, err := newPodSource(deps.Pods)
	if err != nil {
		return nil, err
	}
	c.podSource = pods
	c.cluster = &lazyCluster{informers: deps.Cluster, enqueue: func(key string) { c.enqueueAfter(key, 0) }, maxWait: cfg.SyncPeriod}
	for _, k := range kinds {
		if _, dup := c.kinds[k.Name()]; dup || strings.Contains(k.Name(), "/") {
			return nil, fmt.Errorf("invalid or duplicate kind %q", k.Name())
		}
		c.kinds[k.Name()] = k
		if _, err := k.Informer().AddEventHandler(c.handlers(k.Name())); err != nil {
			return nil, fmt.Errorf("add event handler for %s: %w", k.Name(), err)
		}
	}
	return c, nil
}

// Run waits for the caches, runs the workers and blocks until ctx ends; it
// then shuts the queue down and waits for the workers to finish their item.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)
	synced := []cache.InformerSynced{c.deps.Pods.HasSynced}
	for _, k := range c.kinds {
		synced = append(synced, k.Informer().HasSynced)
	}
	logger.Info("Starting autoscaler controller", "workers", c.cfg.Workers, "syncPeriod", c.cfg.SyncPeriod)
	var wg sync.WaitGroup
	defer func() {
		logger.Info("Shutting down autoscaler controller")
		c.queue.ShutDown()
		wg.Wait()
	}()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, synced...) {
		return errors.New("caches did not sync")
	}
	for range c.cfg.Workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem evaluates one key and schedules its next evaluation one
// sync period later (its own, see periods in sync.go; unless the object is gone).
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if due, ok := c.due.take(key); ok {
		c.deps.SelfMetrics.observeLag(c.deps.Clock.Since(due))
	}
	fenced, cancel, held := c.fence(ctx)
	defer cancel()
	if !held {
		// The Lease was not renewed in time (this replica was frozen or cut
		// off): evaluate nothing, the elector is about to stop the workers.
		c.deps.SelfMetrics.fenced()
		klog.FromContext(ctx).V(2).Info("Skipped an evaluation: the leader election Lease is not known to be held", "key", key)
		c.queue.Forget(key)
		c.enqueueAfter(key, c.periods.of(key, c.cfg.SyncPeriod))
		return true
	}
	deleted, err := c.sync(fenced, key)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed", "key", key)
	}
	c.queue.Forget(key)
	if !deleted {
		c.enqueueAfter(key, c.periods.of(key, c.cfg.SyncPeriod))
	}
	return true
}

// fence bounds one evaluation by the Lease: its reads and writes carry a
// deadline at which the Lease may pass to another replica, so a write that
// would arrive after that is never sent. held is false when that time has
// already passed.
func (c *Controller) fence(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	if c.deps.Lease == nil {
		return ctx, func() {}, true
	}
	until := c.deps.Lease.ValidUntil()
	if until.IsZero() || !time.Now().Before(until) {
		return ctx, func() {}, false
	}
	fenced, cancel := context.WithDeadline(ctx, until)
	return fenced, cancel, true
}

// enqueueAfter adds key to the queue after d, remembering when it is due.
func (c *Controller) enqueueAfter(key string, d time.Duration) {
	c.due.set(key, c.deps.Clock.Now().Add(d))
	if d <= 0 {
		c.queue.Add(key)
		return
	}
	c.queue.AddAfter(key, d)
}

// dueTimes remembers when each queued key is due, for the lag metric. A key
// added twice keeps the earlier time, as the queue keeps the earlier add.
type dueTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (d *dueTimes) set(key string, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if prev, ok := d.at[key]; !ok || at.Before(prev) {
		d.at[key] = at
	}
}

func (d *dueTimes) take(key string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.at[key]
	delete(d.at, key)
	return at, ok
}

func (d *dueTimes) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.at, key)
}

// queueKey is "<kind>/<namespace>/<name>".
func queueKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// splitKey reverses queueKey.
func splitKey(key string) (kind, namespace, name string, err error) {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("invalid queue key %q", key)
	}
	return parts[0], parts[1], parts[2], nil
}

func (c *Controller) keyOf(kind string, obj any) (string, bool) {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("get key of %T: %w", obj, err))
		return "", false
	}
	namespace, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		utilruntime.HandleError(err)
		return "", false
	}
	return queueKey(kind, namespace, name), true
}

// handlers evaluates a new object at once, an object whose spec changed
// (generation bumped) or whose pause or dry-run annotation changed at once, and leaves other updates — such as the
// controller's own status writes — to the periodic evaluation. A deleted
// object is evaluated once more so that its state is dropped.
func (c *Controller) handlers(kind string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if key, ok := c.keyOf(kind, obj); ok {
				c.tracker.register(key)
				c.enqueueAfter(key, 0)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			key, ok := c.keyOf(kind, newObj)
			if !ok {
				return
			}
			if generation(oldObj) != generation(newObj) || controlsChanged(oldObj, newObj) {
				c.enqueueAfter(key, 0)
			}
		},
		DeleteFunc: func(obj any) {
			if key, ok := c.keyOf(kind, obj); ok {
				c.tracker.remove(key)
				c.enqueueAfter(key, 0)
			}
		},
	}
}

// controlsChanged reports whether an annotation that switches an extension
// (pause, dry-run) changed.
func controlsChanged(oldObj, newObj any) bool {
	o, err1 := apimeta.Accessor(oldObj)
	n, err2 := apimeta.Accessor(newObj)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, k := range controlAnnotations {
		if o.GetAnnotations()[k] != n.GetAnnotations()[k] {
			return true
		}
	}
	return false
}

func generation(obj any) int64 {
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return -1
	}
	return m.GetGeneration()
}
