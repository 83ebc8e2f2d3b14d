package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// recordAt is scaledUpRecord at decisionTime+d.
func recordAt(d time.Duration) *v1alpha1.DecisionRecord {
	r := scaledUpRecord()
	r.Time = metav1.NewTime(decisionTime.Add(d))
	return r
}

func autoscalerAt(name, rv string, rec *v1alpha1.DecisionRecord) *v1alpha1.Autoscaler {
	a := autoscaler("shop", name, rec)
	a.ResourceVersion = rv
	return a
}

// scriptedWatches makes the n-th watch of resource return the n-th watcher
// (each preloaded with its events, then closed or left open) and records
// the resource versions and field selectors asked for. Watches after the
// last one fail.
type scriptedWatches struct {
	mu       sync.Mutex
	watchers []watch.Interface
	rvs      []string
	fields   []string
}

func (s *scriptedWatches) react(action clienttesting.Action) (bool, watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := action.(clienttesting.WatchAction).GetWatchRestrictions()
	s.rvs, s.fields = append(s.rvs, r.ResourceVersion), append(s.fields, r.Fields.String())
	if len(s.watchers) == 0 {
		return true, nil, apierrors.NewInternalError(errors.New("no more watches scripted"))
	}
	w := s.watchers[0]
	s.watchers = s.watchers[1:]
	return true, w, nil
}

// preloaded returns a watcher holding events; closed ends it after them.
func preloaded(closed bool, events ...watch.Event) watch.Interface {
	w := watch.NewFakeWithChanSize(len(events), false)
	for _, e := range events {
		w.Action(e.Type, e.Object)
	}
	if closed {
		w.Stop()
	}
	return w
}

func expired() watch.Event {
	return watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("too old resource version: 7 (42)").ErrStatus}
}

// decodedTimes decodes a stream of JSON records and returns their times as
// offsets from decisionTime.
func decodedTimes(t *testing.T, out string) []time.Duration {
	t.Helper()
	var got []time.Duration
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var r v1alpha1.DecisionRecord
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			return got
		} else if err != nil {
			t.Fatalf("decode output: %v\n%s", err, out)
		}
		got = append(got, r.Time.Sub(decisionTime))
	}
}

// TestExplainWatch: --watch prints each new decision once, in record time
// order, skips other objects and older or repeated records, follows
// bookmarks, re-reads the object when the watch expires and watches on
// from there, and ends with an error when the object is deleted.
func TestExplainWatch(t *testing.T) {
	fc := newFakeCluster()
	gets := []runtime.Object{autoscalerAt("web", "7", recordAt(0)), autoscalerAt("web", "20", recordAt(10*time.Second))}
	fc.ebb.PrependReactor("get", "autoscalers", func(clienttesting.Action) (bool, runtime.Object, error) {
		o := gets[0]
		gets = gets[1:]
		return true, o, nil
	})
	sw := &scriptedWatches{watchers: []watch.Interface{
		preloaded(false,
			watch.Event{Type: watch.Modified, Object: autoscalerAt("web", "8", recordAt(0))},
			watch.Event{Type: watch.Bookmark, Object: autoscalerAt("", "9", nil)},
			watch.Event{Type: watch.Modified, Object: autoscalerAt("web", "10", recordAt(5*time.Second))},
			watch.Event{Type: watch.Modified, Object: autoscalerAt("other", "11", recordAt(7*time.Second))},
			watch.Event{Type: watch.Modified, Object: autoscalerAt("web", "12", recordAt(3*time.Second))},
			expired()),
		preloaded(true,
			watch.Event{Type: watch.Modified, Object: autoscalerAt("web", "21", recordAt(10*time.Second))},
			watch.Event{Type: watch.Modified, Object: autoscalerAt("web", "22", recordAt(15*time.Second))}),
		preloaded(false,
			watch.Event{Type: watch.Deleted, Object: autoscalerAt("web", "23", recordAt(15*time.Second))}),
	}}
	fc.ebb.PrependWatchReactor("autoscalers", sw.react)

	out, errOut, code := explain(t, fc, "-n", "shop", "web", "--watch", "-o", "json")
	if code != 1 || errOut != "error: autoscaler shop/web was deleted\n" {
		t.Errorf("exit %d, stderr %q; want 1 and the deletion", code, errOut)
	}
	got := decodedTimes(t, out)
	want := []time.Duration{0, 5 * time.Second, 10 * time.Second, 15 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("printed decisions at %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("printed decisions at %v, want %v", got, want)
		}
	}
	// Watch 1 from the first read, 2 from the re-read after expiry, 3 from
	// the last event of 2 (it closed after delivering).
	if wantRVs := []string{"7", "20", "22"}; strings.Join(sw.rvs, ",") != strings.Join(wantRVs, ",") {
		t.Errorf("watched from resource versions %v, want %v", sw.rvs, wantRVs)
	}
	for _, f := range sw.fields {
		if f != "metadata.name=web" {
			t.Errorf("watch field selector %q, want metadata.name=web", f)
		}
	}
}

// TestExplainWatchTable: tables of successive decisions are separated by a
// blank line; a missing first decision is announced on stderr and awaited.
func TestExplainWatchTable(t *testing.T) {
	fc := newFakeCluster(autoscalerAt("web", "7", nil))
	sw := &scriptedWatches{watchers: []watch.Interface{
		preloaded(false,
			watch.Event{Type: watch.Modified, Object: autoscalerAt("web", "8", recordAt(0))},
			watch.Event{Type: watch.Modified, Object: autoscalerAt("web", "9", recordAt(5*time.Second))},
			watch.Event{Type: watch.Deleted, Object: autoscalerAt("web", "10", nil)}),
	}}
	fc.ebb.PrependWatchReactor("autoscalers", sw.react)
	out, errOut, _ := explain(t, fc, "-n", "shop", "web", "-w")
	if !strings.HasPrefix(errOut, "autoscaler shop/web has no decision yet; waiting for the first one\n") {
		t.Errorf("stderr %q does not announce the wait", errOut)
	}
	first := renderTable(decisionView{Kind: kindAutoscaler, Namespace: "shop", Name: "web", Target: "Deployment/web",
		Record: recordAt(0), Conditions: testConditions()}, decisionTime.Add(12*time.Second))
	second := renderTable(decisionView{Kind: kindAutoscaler, Namespace: "shop", Name: "web", Target: "Deployment/web",
		Record: recordAt(5 * time.Second), Conditions: testConditions()}, decisionTime.Add(12*time.Second))
	if want := first + "\n" + second; out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
}

// TestExplainWatchGivesUp: watches that fail to start, fail with an error
// event or close at once are retried a bounded number of times.
func TestExplainWatchGivesUp(t *testing.T) {
	internal := watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(errors.New("etcd is sad")).ErrStatus}
	tests := []struct {
		name     string
		watchers []watch.Interface
		want     string
	}{
		{"cannot start", nil, "no more watches scripted"},
		{"error events", []watch.Interface{preloaded(false, internal), preloaded(false, internal), preloaded(false, internal)}, "etcd is sad"},
		{"closed at once", []watch.Interface{preloaded(true), preloaded(true), preloaded(true)}, "the watch closed at once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(autoscalerAt("web", "7", recordAt(0)))
			sw := &scriptedWatches{watchers: tt.watchers}
			fc.ebb.PrependWatchReactor("autoscalers", sw.react)
			_, errOut, code := explain(t, fc, "-n", "shop", "web", "--watch", "-o", "yaml")
			if code != 1 || !strings.HasPrefix(errOut, "error: watch autoscaler shop/web: giving up after 3 failed attempts: ") ||
				!strings.Contains(errOut, tt.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stderr %q", code, errOut)
			}
			if len(sw.rvs) != 3 {
				t.Errorf("%d watches, want 3", len(sw.rvs))
			}
		})
	}
}

// TestExplainWatchForbidden: a watch the user may not open is not retried.
func TestExplainWatchForbidden(t *testing.T) {
	fc := newFakeCluster(autoscalerAt("web", "7", recordAt(0)))
	calls := 0
	fc.ebb.PrependWatchReactor("autoscalers", func(clienttesting.Action) (bool, watch.Interface, error) {
		calls++
		return true, nil, apierrors.NewForbidden(autoscalersGR, "", errors.New(`User "dev" cannot watch resource "autoscalers"`))
	})
	_, errOut, code := explain(t, fc, "-n", "shop", "web", "--watch")
	if code != 1 || calls != 1 || !strings.Contains(errOut, "not allowed to read autoscaler shop/web") {
		t.Errorf("exit %d after %d watches, stderr %q", code, calls, errOut)
	}
}

// TestExplainWatchHPA follows the annotation of a drop-in HPA and stops at
// Ctrl-C (context canceled) with exit code 0.
func TestExplainWatchHPA(t *testing.T) {
	fc := newFakeCluster(hpa(t, "shop", "api", recordAt(0)))
	next := hpa(t, "shop", "api", recordAt(5*time.Second))
	sw := &scriptedWatches{watchers: []watch.Interface{preloaded(false, watch.Event{Type: watch.Modified, Object: next})}}
	fc.kube.PrependWatchReactor("horizontalpodautoscalers", sw.react)
	root := rootFor(fc)
	pr, pw := io.Pipe()
	root.SetOut(pw)
	root.SetArgs([]string{"explain", "-n", "shop", "hpa/api", "--watch", "-o", "json"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); _ = pw.Close() }()
	dec := json.NewDecoder(pr)
	for _, want := range []time.Duration{0, 5 * time.Second} {
		var r v1alpha1.DecisionRecord
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if got := r.Time.Sub(decisionTime); got != want {
			t.Errorf("decision at %v, want %v", got, want)
		}
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("explain --watch ended with %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("explain --watch did not stop after cancel")
	}
}

func TestBackoff(t *testing.T) {
	p := retryPolicy{Delay: time.Second, MaxDelay: 5 * time.Second}
	var got []time.Duration
	for i := 1; i <= 5; i++ {
		got = append(got, p.backoff(i))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if !bytes.Equal([]byte(strings.Join(durations(got), ",")), []byte(strings.Join(durations(want), ","))) {
		t.Errorf("backoff = %v, want %v", got, want)
	}
}

func durations(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}
