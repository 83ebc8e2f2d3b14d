package sampleapp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func post(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("POST %s: %d, body: %v", url, resp.StatusCode, err)
		}
	}
	return resp.StatusCode, body
}

func TestQueueMux(t *testing.T) {
	reg := prometheus.NewRegistry()
	q := NewQueue(reg, 10)
	srv := httptest.NewServer(NewQueueMux(reg, q))
	defer srv.Close()

	if code, body := post(t, srv.URL+"/enqueue?n=4"); code != 200 || body["ready"] != 4.0 || body["enqueued"] != 4.0 {
		t.Fatalf("enqueue 4 = %d %v", code, body)
	}
	if code, body := post(t, srv.URL+"/enqueue"); code != 200 || body["ready"] != 5.0 {
		t.Fatalf("enqueue (default 1) = %d %v", code, body)
	}
	// Six more do not fit into 10: none is added.
	if code, body := post(t, srv.URL+"/enqueue?n=6"); code != http.StatusTooManyRequests || body["ready"] != 5.0 {
		t.Fatalf("enqueue beyond the size = %d %v, want 429", code, body)
	}
	for _, bad := range []string{"0", "-1", "x"} {
		if code, _ := post(t, srv.URL+"/enqueue?n="+bad); code != http.StatusBadRequest {
			t.Errorf("enqueue n=%s = %d, want 400", bad, code)
		}
	}
	if got := testutil.ToFloat64(q.ready); got != 5 {
		t.Errorf("queue_messages_ready = %v, want 5", got)
	}

	for i := range 5 {
		code, body := post(t, srv.URL+"/dequeue")
		if code != 200 || body["id"] != float64(i) || body["ready"] != float64(4-i) {
			t.Fatalf("dequeue %d = %d %v, want id %d", i, code, body, i)
		}
	}
	if code, _ := post(t, srv.URL+"/dequeue"); code != http.StatusNoContent {
		t.Fatalf("dequeue of an empty queue = %d, want 204", code)
	}
	if resp, err := http.Get(srv.URL + "/dequeue"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /dequeue = %v %v, want 405", resp.StatusCode, err)
	}

	for name, want := range map[string]float64{"ready": 0, "enqueued": 5, "dequeued": 5, "rejected": 6} {
		c := map[string]prometheus.Collector{"ready": q.ready, "enqueued": q.enqueued, "dequeued": q.dequeued, "rejected": q.rejected}[name]
		if got := testutil.ToFloat64(c); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "queue_messages_ready", "queue_messages_enqueued_total",
		"queue_messages_dequeued_total", "queue_enqueue_rejected_total", "http_requests_total"); err != nil || n < 5 {
		t.Errorf("gathered %d series (%v), want the queue's metrics and http_requests_total", n, err)
	}
}

func TestQueueConcurrent(t *testing.T) {
	q := NewQueue(prometheus.NewRegistry(), 1000)
	var wg sync.WaitGroup
	seen := make([][]uint64, 4)
	for w := range 4 {
		wg.Go(func() {
			for range 100 {
				q.Enqueue(2)
			}
		})
		wg.Go(func() {
			for range 150 {
				if id, _, ok := q.Dequeue(); ok {
					seen[w] = append(seen[w], id)
				}
			}
		})
	}
	wg.Wait()
	ids := map[uint64]bool{}
	for _, s := range seen {
		for _, id := range s {
			if ids[id] {
				t.Fatalf("message %d dequeued twice", id)
			}
			ids[id] = true
		}
	}
	if len(ids)+q.Len() != 800 {
		t.Errorf("dequeued %d + ready %d, want 800", len(ids), q.Len())
	}
	if got := testutil.ToFloat64(q.ready); got != float64(q.Len()) {
		t.Errorf("queue_messages_ready = %v, want %d", got, q.Len())
	}
}
