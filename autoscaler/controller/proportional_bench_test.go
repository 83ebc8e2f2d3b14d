package controller

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	ebbflowfake "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/fake"
	ebbflowinformers "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions"
	informersv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions/autoscaling/v1alpha1"
)

// proportionalScale is a controller with one shared node informer holding
// nodes Nodes (1 in 20 cordoned, 1 in 50 NotReady, 3920m each, spread over
// pools p0..p<selectors-1>) and n Autoscalers with a linear
// ClusterProportional metric, each on its own Deployment; Autoscaler i
// counts pool p<i % selectors> (selectors 1: all nodes, one shared count).
type proportionalScale struct {
	f        *fixture
	client   *ebbflowfake.Clientset
	informer informersv1alpha1.AutoscalerInformer
	keys     []string
	nodes    []*corev1.Node
}

func newProportionalScale(b *testing.B, nodes, n, selectors int) *proportionalScale {
	f := newFixture(b)
	f.recorder.Events = make(chan string, 1<<16)
	s := &proportionalScale{f: f, client: ebbflowfake.NewSimpleClientset()}
	nodeInformer := f.factory.Core().V1().Nodes().Informer()
	for i := range nodes {
		nd := node(fmt.Sprintf("node-%d", i), "3920m", i%50 != 49, i%20 == 19)
		nd.Labels = map[string]string{"pool": fmt.Sprintf("p%d", i%selectors)}
		nd.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("64Gi")
		if err := nodeInformer.GetIndexer().Add(nd); err != nil {
			b.Fatal(err)
		}
		s.nodes = append(s.nodes, nd)
	}
	s.informer = ebbflowinformers.NewSharedInformerFactory(s.client, 0).Autoscaling().V1alpha1().Autoscalers()
	for i := range n {
		name := fmt.Sprintf("dns-%d", i)
		f.target(name, 1, 1)
		a := dnsAutoscaler(v1alpha1.ClusterProportionalSource{
			Linear:       &v1alpha1.LinearParams{CoresPerReplica: 256, NodesPerReplica: 16, Min: 1, PreventSinglePointFailure: true},
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": fmt.Sprintf("p%d", i%selectors)}},
		})
		a.Name, a.Spec.ScaleTargetRef.Name, a.Spec.MaxReplicas = name, name, 1000
		a.Spec.Behavior = immediate()
		if err := s.client.Tracker().Add(a); err != nil {
			b.Fatal(err)
		}
		if err := s.informer.Informer().GetIndexer().Add(a); err != nil {
			b.Fatal(err)
		}
		s.keys = append(s.keys, "Autoscaler/ns/"+name)
	}
	f.deps = func(d *Deps) { d.Cluster = seededCluster(f, nodeInformer) }
	f.build(NewAutoscalerKind(s.informer, s.client.AutoscalingV1alpha1()))
	for _, k := range s.keys {
		s.sync(b, k)
	}
	return s
}

// sync evaluates key and feeds its status write back to the informer, as
// the API server and the informer would.
func (s *proportionalScale) sync(b *testing.B, key string) {
	s.client.ClearActions()
	// Quiet: a benchmark's log lines would split its result lines.
	ctx := klog.NewContext(context.Background(), klog.Background().V(100))
	if _, err := s.f.ctrl.sync(ctx, key); err != nil {
		b.Fatal(err)
	}
	for _, act := range s.client.Actions() {
		if u, ok := act.(core.UpdateAction); ok && act.GetSubresource() == "status" {
			if err := s.informer.Informer().GetIndexer().Update(u.GetObject()); err != nil {
				b.Fatal(err)
			}
		}
	}
	s.f.scales.ClearActions()
	for range len(s.f.recorder.Events) {
		<-s.f.recorder.Events
	}
}

// drain evaluates every queued key once and returns how many there were.
func (s *proportionalScale) drain(b *testing.B) int {
	n := 0
	for s.f.ctrl.queue.Len() > 0 {
		key, _ := s.f.ctrl.queue.Get()
		s.sync(b, key)
		s.f.ctrl.queue.Forget(key)
		s.f.ctrl.queue.Done(key)
		n++
	}
	return n
}

// BenchmarkProportionalEvaluate is one steady evaluation (nothing changes)
// of one of 100 ClusterProportional Autoscalers: it reads a shared count,
// so its cost must not grow with the number of nodes (compare nodes=100
// with nodes=5000).
func BenchmarkProportionalEvaluate(b *testing.B) {
	for _, nodes := range []int{100, 5000} {
		for _, selectors := range []int{1, 100} {
			b.Run(fmt.Sprintf("nodes=%d/autoscalers=100/selectors=%d", nodes, selectors), func(b *testing.B) {
				s := newProportionalScale(b, nodes, 100, selectors)
				b.ResetTimer()
				for i := range b.N {
					s.sync(b, s.keys[i%len(s.keys)])
				}
			})
		}
	}
}

// BenchmarkProportionalNodeEvent is one node event through the shared
// informer's handler — the counts updated once per selector, the
// Autoscalers whose count changed queued — and the evaluation of every
// queued Autoscaler (evaluations/op). A heartbeat changes no count and
// evaluates nothing; a cordon flip changes the count of the Autoscalers
// that count that node's pool: all 100 with one selector, 1 with 100.
func BenchmarkProportionalNodeEvent(b *testing.B) {
	for _, selectors := range []int{1, 100} {
		for _, event := range []string{"heartbeat", "cordon"} {
			b.Run(fmt.Sprintf("nodes=5000/autoscalers=100/selectors=%d/event=%s", selectors, event), func(b *testing.B) {
				s := newProportionalScale(b, 5000, 100, selectors)
				w := s.f.ctrl.cluster.built()
				evaluations := 0
				b.ResetTimer()
				for i := range b.N {
					nd := s.nodes[(i*7)%len(s.nodes)].DeepCopy()
					if event == "cordon" {
						nd.Spec.Unschedulable = !nd.Spec.Unschedulable
						s.nodes[(i*7)%len(s.nodes)] = nd
					} else {
						nd.Status.Conditions[0].LastHeartbeatTime = metav1.Unix(int64(i), 0)
					}
					if err := s.f.factory.Core().V1().Nodes().Informer().GetIndexer().Update(nd); err != nil {
						b.Fatal(err)
					}
					w.nodeChanged(w.counters.Update, nd)
					evaluations += s.drain(b)
				}
				b.ReportMetric(float64(evaluations)/float64(b.N), "evaluations/op")
			})
		}
	}
}
