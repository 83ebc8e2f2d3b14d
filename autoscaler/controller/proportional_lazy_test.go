package controller

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// clusterReads records the list and watch requests for nodes and
// ConfigMaps the fake clientset receives (the fixture clears its actions at
// each sync, and the informers send theirs in the background).
type clusterReads struct {
	mu   sync.Mutex
	seen []string
}

func watchClusterReads(f *fixture) *clusterReads {
	r := &clusterReads{}
	record := func(a core.Action) {
		if res := a.GetResource().Resource; res == "nodes" || res == "configmaps" {
			r.mu.Lock()
			r.seen = append(r.seen, a.GetVerb()+" "+res)
			r.mu.Unlock()
		}
	}
	f.kube.PrependReactor("list", "*", func(a core.Action) (bool, runtime.Object, error) { record(a); return false, nil, nil })
	f.kube.PrependWatchReactor("*", func(a core.Action) (bool, watch.Interface, error) { record(a); return false, nil, nil })
	return r
}

func (r *clusterReads) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// await waits until want has been requested.
func (r *clusterReads) await(t *testing.T, want string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(r.get(), want), nil
	})
	if err != nil {
		t.Fatalf("requests %v, want %q", r.get(), want)
	}
}

// A controller none of whose Autoscalers has a ClusterProportional metric
// never lists or watches nodes or ConfigMaps; the first Autoscaler with one
// starts both informers (real ones, over the fake clientset), scales from
// the listed nodes, and a node joining later evaluates it again at once.
func TestProportionalWatchStartsWithFirstUser(t *testing.T) {
	f := newFixture(t)
	for _, n := range []string{"a", "b", "c"} {
		if err := f.kube.Tracker().Add(node(n, "1", true, false)); err != nil {
			t.Fatal(err)
		}
	}
	reads := watchClusterReads(f)
	ctx, cancel := context.WithCancel(context.Background())
	cluster := informers.NewSharedInformerFactory(f.kube, 0)
	t.Cleanup(func() { cancel(); cluster.Shutdown() })
	starts := 0
	f.deps = func(d *Deps) {
		d.Cluster = func() (ClusterInformers, error) {
			return ClusterInformers{
				Nodes: cluster.Core().V1().Nodes().Informer(), ConfigMaps: cluster.Core().V1().ConfigMaps().Informer(),
				Start: func() { starts++; cluster.Start(ctx.Done()) },
			}, nil
		}
	}

	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	hpa := newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
	web := newAutoscalerLoop(f, &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)})
	if got := web.step(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("web: scale writes %v, want [4]", got)
	}
	if got, w := reads.get(), f.ctrl.cluster.built(); len(got) != 0 || w != nil || starts != 0 {
		t.Fatalf("no ClusterProportional Autoscaler, yet %v requests, watch %v, %d starts", got, w, starts)
	}

	// An Autoscaler with a ClusterProportional metric appears.
	a := dnsAutoscaler(v1alpha1.ClusterProportionalSource{Linear: &v1alpha1.LinearParams{NodesPerReplica: 1}})
	a.Spec.Behavior = immediate()
	f.target("dns", 1, 1)
	if err := web.client.Tracker().Add(a); err != nil {
		t.Fatal(err)
	}
	if err := web.informer.Informer().GetIndexer().Add(a); err != nil {
		t.Fatal(err)
	}
	dns := &autoscalerLoop{f: f, client: web.client, informer: web.informer, obj: a}
	if got := dns.step(); !slices.Equal(got, []int32{3}) {
		t.Fatalf("dns: scale writes %v, want [3] (3 nodes, 1 per replica)", got)
	}
	for _, want := range []string{"list nodes", "list configmaps", "watch nodes", "watch configmaps"} {
		reads.await(t, want)
	}
	f.clock.Step(15 * time.Second)
	web.step()
	if starts != 1 {
		t.Errorf("informers started %d times, want once", starts)
	}

	// A node joins: the watch evaluates dns at once.
	for f.ctrl.queue.Len() > 0 {
		key, _ := f.ctrl.queue.Get()
		f.ctrl.queue.Done(key)
	}
	if err := f.kube.Tracker().Add(node("d", "1", true, false)); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return f.ctrl.queue.Len() > 0, nil
	})
	if err != nil {
		t.Fatal("nothing queued after a node joined")
	}
	if key, _ := f.ctrl.queue.Get(); key != "Autoscaler/ns/dns" {
		t.Fatalf("queued %q after a node joined, want Autoscaler/ns/dns", key)
	}
	f.clock.Step(time.Second)
	if got := dns.step(); !slices.Equal(got, []int32{4}) {
		t.Errorf("dns after a node joined: scale writes %v, want [4]", got)
	}
}

// unsynced is an informer whose cache never syncs (no permission to list
// nodes, say).
type unsynced struct{ cache.SharedIndexInformer }

func (unsynced) HasSynced() bool { return false }

// Caches that never sync fail the metric after at most one sync period:
// the evaluation neither hangs nor scales down, and says why.
func TestProportionalCachesNotSynced(t *testing.T) {
	a := dnsAutoscaler(v1alpha1.ClusterProportionalSource{Linear: &v1alpha1.LinearParams{NodesPerReplica: 1}})
	a.Spec.Behavior = immediate()
	f := newFixture(t)
	f.cfg.SyncPeriod = 200 * time.Millisecond
	f.target("dns", 5, 5)
	if err := f.factory.Core().V1().Nodes().Informer().GetIndexer().Add(node("a", "1", true, false)); err != nil {
		t.Fatal(err)
	}
	f.deps = func(d *Deps) {
		d.Cluster = func() (ClusterInformers, error) {
			return ClusterInformers{Nodes: unsynced{f.factory.Core().V1().Nodes().Informer()}, Start: func() {}}, nil
		}
	}
	l := newAutoscalerLoop(f, a)
	began := time.Now()
	if got := l.step(); len(got) != 0 {
		t.Fatalf("scale writes %v with the node cache not synced, want none", got)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the evaluation waited %v", d)
	}
	var msg string
	for _, c := range l.obj.Status.Conditions {
		if c.Type == autoscalingv2.ScalingActive {
			msg = string(c.Status) + " " + c.Reason + ": " + c.Message
		}
	}
	if !strings.Contains(msg, "False FailedGetClusterProportional") || !strings.Contains(msg, "have not synced yet") {
		t.Errorf("ScalingActive %q", msg)
	}
}
