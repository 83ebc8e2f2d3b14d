package sampleapp

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Queue is a bounded in-memory FIFO of numbered messages. Its methods are safe
// for concurrent use.
type Queue struct {
	size int

	mu       sync.Mutex
	next     uint64 // id of the next message enqueued
	head     uint64 // id of the next message dequeued; ready = next - head
	ready    prometheus.Gauge
	enqueued prometheus.Counter
	dequeued prometheus.Counter
	rejected prometheus.Counter
}

// NewQueue returns an empty queue holding at most size messages, its metrics
// registered on reg: queue_messages_ready, queue_messages_enqueued_total,
// queue_messages_dequeued_total and queue_enqueue_rejected_total.
func NewQueue(reg prometheus.Registerer, size int) *Queue {
	q := &Queue{
		size: size,
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "queue_messages_ready", Help: "Messages in the queue, ready to be dequeued.",
		}),
		enqueued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queue_messages_enqueued_total", Help: "Messages enqueued.",
		}),
		dequeued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queue_messages_dequeued_total", Help: "Messages dequeued.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queue_enqueue_rejected_total", Help: "Messages refused because the queue was full.",
		}),
	}
	reg.MustRegister(q.ready, q.enqueued, q.dequeued, q.rejected)
	return q
}

// Enqueue adds n > 0 messages, all or none: it reports false, adding none,
// when they do not fit.
func (q *Queue) Enqueue(n int) (ready int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := int(q.next - q.head)
	if n <= 0 || n > q.size-r {
		q.rejected.Add(float64(max(n, 0)))
		return r, false
	}
	q.next += uint64(n)
	q.enqueued.Add(float64(n))
	q.ready.Set(float64(r + n))
	return r + n, true
}

// Dequeue takes the oldest message and returns its id, or false when the
// queue is empty.
func (q *Queue) Dequeue() (id uint64, ready int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == q.next {
		return 0, 0, false
	}
	id = q.head
	q.head++
	q.dequeued.Inc()
	r := int(q.next - q.head)
	q.ready.Set(float64(r))
	return id, r, true
}

// Len returns the number of ready messages.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int(q.next - q.head)
}

// NewQueueMux returns the queue mode's handlers, counted in
// http_requests_total registered on reg:
//
//	POST /enqueue?n=N  adds N messages (default 1): 200 {"enqueued":N,"ready":R},
//	                   400 for a bad N, 429 when they do not fit (none added)
//	POST /dequeue      takes one: 200 {"id":I,"ready":R}, 204 when empty
func NewQueueMux(reg prometheus.Registerer, q *Queue) *http.ServeMux {
	requests := newRequestsCounter(reg)
	mux := http.NewServeMux()
	mux.Handle("POST /enqueue", instrument(requests, "/enqueue", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := 1
		if s := r.URL.Query().Get("n"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v <= 0 {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": "n must be a positive integer"})
				return
			}
			n = v
		}
		ready, ok := q.Enqueue(n)
		if !ok {
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": "queue full", "ready": ready, "size": q.size})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"enqueued": n, "ready": ready})
	})))
	mux.Handle("POST /dequeue", instrument(requests, "/dequeue", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		id, ready, ok := q.Dequeue()
		if !ok {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "ready": ready})
	})))
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
