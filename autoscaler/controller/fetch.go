package controller

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/ebbflow/ebbflow/autoscaler/decision"
)

// Defaults of the bounds on concurrent metric reads (Config zero values).
const (
	// DefaultMetricReadsPerEvaluation bounds the reads one evaluation has in
	// flight: an evaluation takes as long as its slowest read, not the sum.
	DefaultMetricReadsPerEvaluation = 8
	// DefaultMaxConcurrentMetricReads bounds the reads in flight over all
	// workers, to spare the metrics APIs. It is above the default workers
	// times three metrics, so that it does not limit the default setup.
	DefaultMaxConcurrentMetricReads = 512
)

// readLimiter bounds concurrent metric reads per evaluation and over the
// whole controller. Results never depend on the bounds: each read fills its
// own slot of the evaluation's readings, in spec order.
type readLimiter struct {
	perEvaluation int
	// slots holds one token per read in flight over the controller.
	slots chan struct{}
	self  *SelfMetrics
}

func newReadLimiter(perEvaluation, global int, self *SelfMetrics) *readLimiter {
	if perEvaluation <= 0 {
		perEvaluation = DefaultMetricReadsPerEvaluation
	}
	if global <= 0 {
		global = DefaultMaxConcurrentMetricReads
	}
	return &readLimiter{perEvaluation: perEvaluation, slots: make(chan struct{}, global), self: self}
}

// run calls read(ctx, i) for every index in jobs, at most perEvaluation at
// once and each holding one of the controller's slots; it returns when all
// are done. A job whose slot could not be had before ctx ended gets
// failed(i, ctx.Err()) instead.
func (l *readLimiter) run(ctx context.Context, jobs []int, read func(context.Context, int), failed func(int, error)) {
	one := func(i int) {
		if err := ctx.Err(); err != nil {
			failed(i, err)
			return
		}
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			failed(i, ctx.Err())
			return
		}
		l.self.readsInFlight(1)
		defer func() {
			l.self.readsInFlight(-1)
			<-l.slots
		}()
		read(ctx, i)
	}
	n := min(l.perEvaluation, len(jobs))
	if n <= 1 {
		for _, i := range jobs {
			one(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				j := int(next.Add(1)) - 1
				if j >= len(jobs) {
					return
				}
				one(jobs[j])
			}
		})
	}
	wg.Wait()
}

// readMetrics reads every metric of the spec, concurrently within the
// controller's bounds; out[i] is the reading of the i-th metric whatever
// the order in which the reads end. A metric whose spec is invalid is not
// read (decision.Propose reports it).
func (ev *evaluation) readMetrics(ctx context.Context) []decision.Reading {
	specs := ev.obj.Spec.Metrics
	out := make([]decision.Reading, len(specs))
	jobs := make([]int, 0, len(specs))
	for i, spec := range specs {
		out[i] = decision.Reading{Spec: spec}
		if _, err := decision.Classify(spec); err != nil {
			continue
		}
		jobs = append(jobs, i)
	}
	ev.c.reads.run(ctx, jobs, func(ctx context.Context, i int) {
		missingAsZero := i < len(ev.obj.MetricOptions) && ev.obj.MetricOptions[i].MissingAsZero
		ev.read(ctx, &out[i], missingAsZero)
	}, func(i int, err error) {
		ev.readFailed(&out[i], err)
	})
	return out
}
