package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// sync evaluates the object behind key once. deleted is true when the object
// is gone (its state is then dropped) or the key is invalid.
func (c *Controller) sync(ctx context.Context, key string) (deleted bool, err error) {
	kind, namespace, name, err := splitKey(key)
	if err != nil {
		return true, err
	}
	k, ok := c.kinds[kind]
	if !ok {
		return true, fmt.Errorf("no kind %q", kind)
	}
	logger := klog.FromContext(ctx).WithValues("kind", kind, "autoscaler", klog.KRef(namespace, name))
	ctx = klog.NewContext(ctx, logger)
	obj, err := k.Get(namespace, name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		logger.V(2).Info("Autoscaler has been deleted, dropped its state")
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if err := c.writes.ensureSeen(key, obj.ResourceVersion); err != nil {
		return false, err
	}
	c.tracker.register(key)
	start := c.deps.Clock.Now()
	err = c.evaluate(ctx, key, k, obj)
	c.deps.SelfMetrics.observeReconcile(kind, c.deps.Clock.Since(start), err)
	return false, err
}

// forget drops everything the controller remembers about key.
func (c *Controller) forget(key string) {
	c.memory.delete(key)
	c.writes.forget(key)
	c.tracker.remove(key)
	c.due.forget(key)
	c.deps.SelfMetrics.forget(key)
	if w := c.cluster.built(); w != nil {
		w.forget(key)
	}
	c.periods.forget(key)
	c.histories.forget(key)
}

// evaluate is one evaluation, read top to bottom:
//
//	observe → evaluation.Evaluate (its last stage acts) → persist
//
// observe reads the scale, the pods and the metrics; evaluation.Evaluate
// decides everything, in the stages it declares (pure: proposals,
// upstream's decision, the extensions, conditions, events, status and
// decision record), and writes /scale through act when it decided to;
// persist records the events and writes the status, record and scale
// events once.
func (c *Controller) evaluate(ctx context.Context, key string, k Kind, obj *Object) error {
	mem, fresh := c.memory.get(key)
	in := evaluation.Input{
		Spec: obj.Spec, Settings: c.settings(), Namespace: obj.Namespace, Target: targetName(obj),
		Generation: obj.Generation, Status: obj.Status, ProportionalStatus: obj.ProportionalStatus,
		ScaleEvents: obj.ScaleEvents, Now: c.deps.Clock.Now(), Memory: mem,
	}
	for _, w := range obj.Warnings {
		in.Warnings = append(in.Warnings, evaluation.Event{Type: corev1.EventTypeWarning, Reason: "InvalidAnnotation", Message: w})
	}
	if fresh {
		restoreScaleEvents(&in, obj.ScaleEventsField)
	}
	// observe sets in.ReadAt, when it completed: the decision's time (no
	// sample it read is newer than the decision).
	scale := c.observe(ctx, key, obj, &in)
	res := evaluation.Evaluate(in, c.act(ctx, obj, scale))
	if len(obj.Spec.Schedules) > 0 {
		c.periods.set(key, obj.Spec.NextEvaluation(&res.Floor, in.Now, c.cfg.SyncPeriod))
	} else {
		c.periods.set(key, obj.Spec.Period(c.cfg.SyncPeriod))
	}
	return c.persist(ctx, key, k, obj, &res)
}

// settings are the controller-wide settings an evaluation reads.
func (c *Controller) settings() evaluation.Settings {
	return evaluation.Settings{
		Tolerance: c.cfg.Tolerance, DownscaleStabilization: c.cfg.DownscaleStabilization,
		CPUInitializationPeriod: c.cfg.CPUInitializationPeriod, InitialReadinessDelay: c.cfg.InitialReadinessDelay,
	}
}

// targetName names the scale target as upstream's messages do.
func targetName(obj *Object) string {
	ref := obj.Spec.HPA.ScaleTargetRef
	return fmt.Sprintf("%s/%s/%s", ref.Kind, obj.Namespace, ref.Name)
}

// restoreScaleEvents reads the stored rescales on the first evaluation of an
// object by this process, so that a replica taking over the leader election
// (or a restarted one) goes on counting them: without them a failover right
// after a step would let the behavior's policies allow a second full step
// within their period. An invalid value is reported and ignored. (The
// stabilization windows' recommendations are not stored: a fresh Memory
// starts at the current replica count, as upstream after a restart.)
func restoreScaleEvents(in *evaluation.Input, where string) {
	events, err := behavior.DecodeEvents(in.ScaleEvents, in.Now)
	if err != nil {
		in.Warnings = append(in.Warnings, evaluation.Event{Type: corev1.EventTypeWarning, Reason: "InvalidScaleEvents",
			Message: fmt.Sprintf("%s ignored: %v", where, err)})
		return
	}
	in.Memory.Events = events
}

// act is the write of an evaluation of obj (evaluation.WriteScale): it
// writes the decided count to the target's /scale ts, retrying on conflicts
// with a fresh read. It is the only place that writes the target.
func (c *Controller) act(ctx context.Context, obj *Object, ts *targetScale) evaluation.WriteScale {
	return func(desired int32, reason string) (time.Time, error) {
		scales := c.deps.Scales.Scales(obj.Namespace)
		s := ts.scale.DeepCopy()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s.Spec.Replicas = desired
			_, err := scales.Update(ctx, ts.resource, s, metav1.UpdateOptions{})
			if err == nil {
				return nil
			}
			latest, getErr := scales.Get(ctx, ts.resource, s.Name, metav1.GetOptions{})
			if getErr != nil {
				utilruntime.HandleErrorWithContext(ctx, getErr, "Reading the latest scale failed", "scaleTarget", targetName(obj))
			} else {
				s = latest
			}
			return err
		})
		if err == nil {
			klog.FromContext(ctx).Info("Successfully rescaled", "scaleTarget", targetName(obj),
				"currentReplicas", ts.scale.Spec.Replicas, "desiredReplicas", desired, "reason", reason)
		}
		return c.deps.Clock.Now(), err
	}
}

// persist records the result's events, has the object's kind store what changed
// (status, decision record, scale events) and counts the outcome. It returns
// the evaluation's error, else the store's, else that of the metrics that
// failed without stopping the decision (upstream reports it after acting).
func (c *Controller) persist(ctx context.Context, key string, k Kind, obj *Object, res *evaluation.Result) error {
	m := c.deps.SelfMetrics
	for _, r := range res.Metrics {
		if r.Reading.FetchErr != nil {
			m.fetchError(string(r.Reading.Spec.Type))
		}
	}
	m.fallback(key, res.FallbackActive)
	m.scheduleFloor(key, len(obj.Spec.Schedules) > 0, res.Floor.Replicas)
	m.replicas(key, res.Direction() != "", res.Status.CurrentReplicas, res.Status.DesiredReplicas)
	var forecasts []evaluation.ForecastFigure
	if obj.Spec.HasForecast() {
		forecasts = res.Forecasts()
	}
	m.forecast(key, forecasts)
	for _, e := range res.Events {
		c.deps.Recorder.Event(obj.Source, e.Type, e.Reason, e.Message)
	}
	change := Change{
		Status:      !apiequality.Semantic.DeepEqual(&obj.Status, &res.Status) || res.ProportionalChanged,
		Record:      c.recordChanged(obj, res),
		ScaleEvents: res.ScaleEventsChanged,
		BuildRecord: c.buildRecord(res),
	}
	obj.Status, obj.ProportionalStatus, obj.ScaleEvents = res.Status, res.ProportionalStatus, res.ScaleEvents
	stored, err := k.Store(ctx, obj, change)
	for _, w := range stored {
		c.writes.wrote(key, w.ResourceVersion)
		m.apiWrite(w.What)
		klog.FromContext(ctx).V(2).Info("Stored", "what", w.What)
	}
	var se *StatusError
	if errors.As(err, &se) {
		c.deps.Recorder.Event(obj.Source, corev1.EventTypeWarning, "FailedUpdateStatus", se.Err.Error())
	}
	m.outcome(string(res.Outline.Outcome))
	if d := res.Direction(); d != "" {
		m.decision(d)
	}
	if logger := klog.FromContext(ctx).V(2); logger.Enabled() {
		logEvaluated(logger, res, targetName(obj))
	}
	switch {
	case res.Err != nil:
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Status update failed")
		}
		return res.Err
	case err != nil:
		return err
	}
	return res.Decision.Err
}

// targetScale is the scale target's /scale and the resource it was read from.
type targetScale struct {
	scale    *autoscalingv1.Scale
	resource schema.GroupResource
}

// scaleError is a failure to read the scale: cause is what the event and the
// condition show, context what the returned error adds.
type scaleError struct {
	context string
	cause   error
}

func (e *scaleError) Error() string { return e.context + ": " + e.cause.Error() }
func (e *scaleError) Unwrap() error { return e.cause }

// getScale reads the scale target's /scale through each REST mapping of its
// kind in turn; the first mapping's error is reported if none works.
func (c *Controller) getScale(ctx context.Context, obj *Object) (*targetScale, *scaleError) {
	ref := obj.Spec.HPA.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, &scaleError{"invalid API version in scale target reference", err}
	}
	mappings, err := c.deps.Mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return nil, &scaleError{"unable to determine resource for scale target reference", err}
	}
	var first error
	for _, m := range mappings {
		gr := m.Resource.GroupResource()
		s, err := c.deps.Scales.Scales(obj.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return &targetScale{scale: s, resource: gr}, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = errors.New("unrecognized resource")
	}
	return nil, &scaleError{"failed to query scale subresource for " + targetName(obj), first}
}

// What the controller remembers per key: the evaluation.Memory an autoscaler
// carries between evaluations (memoryStore), the resource version of its last write
// (writeTracker) and when it is due again (periods).

// memoryStore maps queue keys to memories. A Memory is used by one
// reconcile at a time (the queue never hands a key to two workers), so its
// fields need no lock.
type memoryStore struct {
	mu sync.Mutex
	m  map[string]*evaluation.Memory
}

func newMemoryStore() *memoryStore {
	return &memoryStore{m: map[string]*evaluation.Memory{}}
}

// get returns the Memory of key, creating an empty one; fresh is true when
// it did (the first evaluation of key by this process).
func (s *memoryStore) get(key string) (h *evaluation.Memory, fresh bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[key]
	if !ok {
		h = &evaluation.Memory{}
		s.m[key] = h
	}
	return h, !ok
}

// peek returns the Memory of key without creating it.
func (s *memoryStore) peek(key string) (*evaluation.Memory, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[key]
	return h, ok
}

func (s *memoryStore) delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// writeTracker remembers the resource version of the controller's last
// status write per key, so that a reconcile never starts from a cache older
// than that write (it would decide from a stale status and write again), as
// upstream's consistency store does (StaleControllerConsistencyHPA, on by
// default in v1.37).
type writeTracker struct {
	mu sync.Mutex
	rv map[string]string
}

func newWriteTracker() *writeTracker {
	return &writeTracker{rv: map[string]string{}}
}

// wrote records a write that produced resource version rv.
func (w *writeTracker) wrote(key, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.rv[key]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(prev, rv); err == nil && cmp >= 0 {
			return
		}
	}
	w.rv[key] = rv
}

// ensureSeen returns an error while the cached object (at resource version
// cached) is older than the last write; once it is not, the record is
// dropped. Versions that cannot be compared never block.
func (w *writeTracker) ensureSeen(key, cached string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	written, ok := w.rv[key]
	if !ok {
		return nil
	}
	if cmp, err := resourceversion.CompareResourceVersion(written, cached); err == nil && cmp > 0 {
		return fmt.Errorf("read version %s of %s is not as new as written version %s", cached, key, written)
	}
	delete(w.rv, key)
	return nil
}

func (w *writeTracker) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}

// periods remembers, per key, how long after its evaluation an object is
// evaluated again (evaluation.Spec.NextEvaluation: its own sync period,
// shortened when a schedule's floor changes sooner). A key never evaluated
// waits the controller's period.
type periods struct {
	mu sync.Mutex
	m  map[string]time.Duration
}

func newPeriods() *periods { return &periods{m: map[string]time.Duration{}} }

func (p *periods) set(key string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[key] = d
}

// of returns key's wait, def when it has none yet.
func (p *periods) of(key string, def time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d, ok := p.m[key]; ok {
		return d
	}
	return def
}

func (p *periods) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, key)
}
