package fakeapp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Metric names and label names the fake app publishes.
const (
	RequestsMetric = "http_requests_total"
	QueueMetric    = "queue_messages_ready"
)

// DefaultInterval is how often counters and the queue advance.
const DefaultInterval = 200 * time.Millisecond

// Sink receives the simulated series. *exporter.Exporter satisfies it.
type Sink interface {
	AddCounter(name string, labels map[string]string, delta float64)
	SetGauge(name string, labels map[string]string, v float64)
	Delete(name string, labels map[string]string) bool
}

// Pods is a view of one workload's pods.
type Pods interface {
	// Snapshot returns the names of the Ready, non-terminating pods and of all
	// pods currently present (Ready or not).
	Snapshot() (ready []string, present map[string]bool)
}

// Service is a request-serving workload: its Ready pods share a total request
// rate that follows Rate (requests per second).
type Service struct {
	// Namespace and Selector (a label selector) pick the pods.
	Namespace, Selector string
	// Service is the value of the service label on the published counters.
	Service string
	// Rate is the offered load in requests per second: a Profile, a Setpoint
	// or any other Curve.
	Rate Curve
	// Usage, when set, publishes cpu and memory series per pod (resources.go).
	Usage *Usage
}

// Queue is a message queue: producers add Produce messages per second, each
// Ready worker pod (Namespace, Selector) consumes ConsumePerPod per second.
type Queue struct {
	// Name is the value of the queue label.
	Name string
	// Namespace and Selector (a label selector) pick the worker pods.
	Namespace, Selector string
	// Produce is the producers' rate in messages per second.
	Produce Curve
	// ConsumePerPod is each Ready worker's drain rate in messages per second.
	ConsumePerPod float64
	// Initial is the depth at the start.
	Initial float64
}

// Config configures a App. Client and Sink are required.
type Config struct {
	Client kubernetes.Interface
	Sink   Sink
	// Clock defaults to the real clock.
	Clock clock.WithTicker
	// Interval between steps; default DefaultInterval.
	Interval time.Duration
	Services []Service
	Queues   []Queue
}

// ServiceStatus is what a Service offers and how it is spread right now.
type ServiceStatus struct {
	Service   string
	Offered   float64 // requests per second, all pods together
	ReadyPods int
	PerPod    float64 // requests per second per Ready pod
}

// QueueStatus is the state of one Queue right now.
type QueueStatus struct {
	Queue   string
	Depth   float64
	Produce float64 // messages per second
	Workers int
}

// Status is a snapshot of the simulation.
type Status struct {
	Elapsed  time.Duration
	Services []ServiceStatus
	Queues   []QueueStatus
}

// App publishes the series of its Services and Queues until its context
// ends. Create it with New and run it with Run, once.
type App struct {
	cfg Config

	mu        sync.Mutex
	start     time.Time
	last      time.Time
	services  []*serviceState
	queues    []*queueState
	published bool
}

type serviceState struct {
	spec      Service
	pods      Pods
	published map[string]bool
	usage     map[string]bool // pods with usage series
	status    ServiceStatus
}

type queueState struct {
	q      Queue
	pods   Pods
	depth  float64
	status QueueStatus
}

// New validates cfg and returns a App that is not yet running.
func New(cfg Config) (*App, error) {
	if cfg.Sink == nil {
		return nil, errors.New("fakeapp: no sink")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	for _, s := range cfg.Services {
		if s.Service == "" || s.Namespace == "" {
			return nil, fmt.Errorf("fakeapp: service %+v: namespace and service are required", s)
		}
		if err := validCurve(s.Rate); err != nil {
			return nil, fmt.Errorf("fakeapp: service %s: %w", s.Service, err)
		}
		if s.Usage != nil {
			if err := s.Usage.validate(); err != nil {
				return nil, fmt.Errorf("fakeapp: service %s: %w", s.Service, err)
			}
		}
	}
	for _, q := range cfg.Queues {
		if q.Name == "" || q.Namespace == "" || q.ConsumePerPod < 0 || q.Initial < 0 {
			return nil, fmt.Errorf("fakeapp: queue %+v: name and namespace required, rates not negative", q)
		}
		if err := validCurve(q.Produce); err != nil {
			return nil, fmt.Errorf("fakeapp: queue %s: %w", q.Name, err)
		}
	}
	return &App{cfg: cfg}, nil
}

// Run watches the pods of every workload, then advances the series every
// Interval until ctx is done. The profiles' time zero is when the pod caches
// have synced. Run returns nil when ctx ends, after removing every series it
// published; it returns an error if the caches cannot sync. It needs
// Config.Client.
func (s *App) Run(ctx context.Context) error {
	if s.cfg.Client == nil {
		return errors.New("fakeapp: no kubernetes client")
	}
	watches := newWatchSet(s.cfg.Client)
	pods := func(ns, sel string) (Pods, error) { return watches.add(ns, sel) }
	if err := s.attach(pods); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel() // the informers stop on cancel; shutdown waits for them
		watches.shutdown()
	}()
	if err := watches.start(ctx); err != nil {
		return err
	}
	defer s.clear()

	s.begin(s.cfg.Clock.Now())
	ticker := s.cfg.Clock.NewTicker(s.cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-ticker.C():
			s.Step(now)
		}
	}
}

// attach gives every workload its pod view.
func (s *App) attach(pods func(ns, sel string) (Pods, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, spec := range s.cfg.Services {
		p, err := pods(spec.Namespace, spec.Selector)
		if err != nil {
			return fmt.Errorf("fakeapp: service %s: %w", spec.Service, err)
		}
		s.services = append(s.services, &serviceState{spec: spec, pods: p, published: map[string]bool{}, usage: map[string]bool{}})
	}
	for _, q := range s.cfg.Queues {
		p, err := pods(q.Namespace, q.Selector)
		if err != nil {
			return fmt.Errorf("fakeapp: queue %s: %w", q.Name, err)
		}
		s.queues = append(s.queues, &queueState{q: q, pods: p, depth: q.Initial})
	}
	return nil
}

// begin sets the profiles' time zero and publishes the initial queue depths.
func (s *App) begin(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start, s.last = now, now
	for _, q := range s.queues {
		s.cfg.Sink.SetGauge(QueueMetric, map[string]string{"queue": q.q.Name}, q.depth)
	}
	s.published = true
}

// Step advances every series from the previous step to now. Run calls it on
// every tick; tests call it directly with a fake clock's times.
func (s *App) Step(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dt := now.Sub(s.last)
	if dt < 0 {
		dt = 0
	}
	s.last = now
	elapsed := now.Sub(s.start)
	for _, st := range s.services {
		s.stepService(st, elapsed, dt)
	}
	for _, q := range s.queues {
		ready, _ := q.pods.Snapshot()
		produce := q.q.Produce.At(elapsed)
		q.depth = QueueStep(q.depth, produce, q.q.ConsumePerPod, len(ready), dt)
		s.cfg.Sink.SetGauge(QueueMetric, map[string]string{"queue": q.q.Name}, q.depth)
		q.status = QueueStatus{Queue: q.q.Name, Depth: q.depth, Produce: produce, Workers: len(ready)}
	}
}

// stepService advances the counters of the Ready pods of one Service and
// removes the series of pods that no longer exist.
func (s *App) stepService(st *serviceState, elapsed, dt time.Duration) {
	ready, present := st.pods.Snapshot()
	offered := st.spec.Rate.At(elapsed)
	per := PerPod(offered, len(ready))
	inc := Increment(per, dt)
	for _, pod := range ready {
		s.cfg.Sink.AddCounter(RequestsMetric, requestLabels(st.spec, pod), inc)
		st.published[pod] = true
	}
	for pod := range st.published {
		if !present[pod] {
			s.cfg.Sink.Delete(RequestsMetric, requestLabels(st.spec, pod))
			delete(st.published, pod)
		}
	}
	s.stepUsage(st, ready, present, per, dt.Seconds())
	st.status = ServiceStatus{Service: st.spec.Service, Offered: offered, ReadyPods: len(ready), PerPod: per}
}

// clear removes every series the fake app published.
func (s *App) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.services {
		for pod := range st.published {
			s.cfg.Sink.Delete(RequestsMetric, requestLabels(st.spec, pod))
			delete(st.published, pod)
		}
		for pod := range st.usage {
			s.deleteUsage(st, pod)
		}
	}
	if s.published {
		for _, q := range s.queues {
			s.cfg.Sink.Delete(QueueMetric, map[string]string{"queue": q.q.Name})
		}
	}
}

// Status returns a snapshot of the last step.
func (s *App) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Elapsed: s.last.Sub(s.start)}
	for _, sv := range s.services {
		st.Services = append(st.Services, sv.status)
	}
	for _, q := range s.queues {
		st.Queues = append(st.Queues, q.status)
	}
	return st
}

func requestLabels(s Service, pod string) map[string]string {
	return map[string]string{"namespace": s.Namespace, "pod": pod, "service": s.Service}
}

// validCurve rejects a missing curve and an invalid Profile.
func validCurve(c Curve) error {
	if c == nil {
		return errors.New("no rate curve")
	}
	if p, ok := c.(Profile); ok {
		return p.Validate()
	}
	return nil
}
