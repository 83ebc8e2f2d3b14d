package metrics

import (
	"context"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Deduplicated is a Client that sends each distinct question once per window:
// concurrent identical calls share one request, and an answer (value or
// error) is reused for identical calls until window has passed since it
// arrived — or, for a call whose context carries WithMaxAge, until that
// shorter age has passed. Answers are shared, so callers must not modify
// them.
type Deduplicated struct {
	next     Client
	resource memo[samplesAt]
	pods     memo[samplesAt]
	object   memo[valueAt]
	external memo[valuesAt]
}

var _ Client = (*Deduplicated)(nil)

type samplesAt struct {
	samples replicas.Samples
	at      time.Time
}

type valueAt struct {
	value int64
	at    time.Time
}

type valuesAt struct {
	values []int64
	at     time.Time
}

// NewDeduplicated wraps next. A window of zero or less only merges concurrent
// identical calls. clk measures the window.
func NewDeduplicated(next Client, window time.Duration, clk clock.PassiveClock) *Deduplicated {
	return &Deduplicated{
		next:     next,
		resource: newMemo[samplesAt](window, clk),
		pods:     newMemo[samplesAt](window, clk),
		object:   newMemo[valueAt](window, clk),
		external: newMemo[valuesAt](window, clk),
	}
}

type maxAgeKey struct{}

// WithMaxAge returns a context under which a Deduplicated client reuses no
// answer older than age (at most its window): an autoscaler passes its own
// sync period, so that it never decides on a value older than the period
// however long the window. An age of zero or less reuses only answers in
// flight.
func WithMaxAge(ctx context.Context, age time.Duration) context.Context {
	return context.WithValue(ctx, maxAgeKey{}, max(age, 0))
}

// maxAge is the reuse age for calls under ctx: the window, shortened by
// WithMaxAge.
func maxAge(ctx context.Context, window time.Duration) time.Duration {
	if age, ok := ctx.Value(maxAgeKey{}).(time.Duration); ok {
		return min(age, window)
	}
	return window
}

// key joins the parts of a request with a separator that label selectors,
// names and namespaces cannot contain.
func key(parts ...string) string { return strings.Join(parts, "\x00") }

func selectorString(s labels.Selector) string {
	if s == nil {
		return ""
	}
	return s.String()
}

// PodResources implements Client.
func (d *Deduplicated) PodResources(ctx context.Context, namespace string, selector labels.Selector, resource corev1.ResourceName, container string) (replicas.Samples, time.Time, error) {
	k := key(namespace, selectorString(selector), string(resource), container)
	r, err := d.resource.get(ctx, k, func() (samplesAt, error) {
		s, at, err := d.next.PodResources(ctx, namespace, selector, resource, container)
		return samplesAt{s, at}, err
	})
	return r.samples, r.at, err
}

// PodMetric implements Client.
func (d *Deduplicated) PodMetric(ctx context.Context, namespace, metric string, selector, metricSelector labels.Selector) (replicas.Samples, time.Time, error) {
	k := key(namespace, metric, selectorString(selector), selectorString(metricSelector))
	r, err := d.pods.get(ctx, k, func() (samplesAt, error) {
		s, at, err := d.next.PodMetric(ctx, namespace, metric, selector, metricSelector)
		return samplesAt{s, at}, err
	})
	return r.samples, r.at, err
}

// ObjectMetric implements Client.
func (d *Deduplicated) ObjectMetric(ctx context.Context, namespace, metric string, ref autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	k := key(namespace, metric, ref.APIVersion, ref.Kind, ref.Name, selectorString(metricSelector))
	r, err := d.object.get(ctx, k, func() (valueAt, error) {
		v, at, err := d.next.ObjectMetric(ctx, namespace, metric, ref, metricSelector)
		return valueAt{v, at}, err
	})
	return r.value, r.at, err
}

// ExternalMetric implements Client.
func (d *Deduplicated) ExternalMetric(ctx context.Context, namespace, metric string, selector labels.Selector) ([]int64, time.Time, error) {
	k := key(namespace, metric, selectorString(selector))
	r, err := d.external.get(ctx, k, func() (valuesAt, error) {
		v, at, err := d.next.ExternalMetric(ctx, namespace, metric, selector)
		return valuesAt{v, at}, err
	})
	return r.values, r.at, err
}

// memo holds answers by key for a window, and merges concurrent calls.
type memo[T any] struct {
	window time.Duration
	clock  clock.PassiveClock

	mu        sync.Mutex
	entries   map[string]*entry[T]
	nextSweep time.Time
}

type entry[T any] struct {
	done  chan struct{}
	value T
	err   error
	// arrived is when the answer came.
	arrived time.Time
}

func newMemo[T any](window time.Duration, clk clock.PassiveClock) memo[T] {
	return memo[T]{window: window, clock: clk, entries: map[string]*entry[T]{}}
}

// get returns the answer stored under k if younger than the window (or
// ctx's WithMaxAge), waiting for one in flight, or calls fetch and stores
// its answer. A caller whose ctx ends while waiting gets
// ctx's error; the fetch goes on for the others. An answer whose fetch was
// cancelled is not kept.
func (m *memo[T]) get(ctx context.Context, k string, fetch func() (T, error)) (T, error) {
	m.mu.Lock()
	now := m.clock.Now()
	m.sweep(now)
	if e, ok := m.entries[k]; ok && (!isDone(e) || now.Before(e.arrived.Add(maxAge(ctx, m.window)))) {
		m.mu.Unlock()
		select {
		case <-e.done:
			return e.value, e.err
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
	e := &entry[T]{done: make(chan struct{})}
	m.entries[k] = e
	m.mu.Unlock()

	e.value, e.err = fetch()
	m.mu.Lock()
	e.arrived = m.clock.Now()
	if ctx.Err() != nil && m.entries[k] == e {
		delete(m.entries, k)
	}
	close(e.done)
	m.mu.Unlock()
	return e.value, e.err
}

func isDone[T any](e *entry[T]) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// sweep drops expired answers, at most once per window. m.mu must be held.
func (m *memo[T]) sweep(now time.Time) {
	if now.Before(m.nextSweep) {
		return
	}
	for k, e := range m.entries {
		if isDone(e) && !now.Before(e.arrived.Add(m.window)) {
			delete(m.entries, k)
		}
	}
	m.nextSweep = now.Add(max(m.window, time.Second))
}
