package e2e

// The leader failover harness: two ebbflow-autoscaler replicas under leader
// election on one Lease, an Autoscaler of a Deployment on an External metric
// that ramps up, and a fault on the leader mid-ramp (SIGKILL, or SIGSTOP for
// longer than the Lease, then SIGCONT). Every /scale write is seen on a watch
// of the Deployment and attributed to the replica whose SuccessfulRescale
// event ("New size: N", reportingInstance = its --leader-elect-identity)
// names that count.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/test/cluster"
)

// Failover settings: short, so a failover takes seconds (production keeps
// 15s/10s/2s and a 15s sync period).
const (
	foSyncPeriod    = 2 * time.Second
	foLeaseDuration = 4 * time.Second
	foRenewDeadline = 3 * time.Second
	foRetryPeriod   = 500 * time.Millisecond
	// foTakeoverBound is what the issue allows: lease duration + one sync period.
	foTakeoverBound = foLeaseDuration + foSyncPeriod
	// foRampPerSecond is the metric's growth; with AverageValue 10 the
	// desired count grows by 1.5 per second, about 3 per sync period, so
	// each replica's writes per round stay under the event correlator's
	// aggregation threshold (10 similar events).
	foRampPerSecond = 15.0
	foTarget        = 10.0
	foMaxReplicas   = 40
	foLeaseName     = "ebbflow-autoscaler"
)

type faultMode string

const (
	faultKill   faultMode = "kill"   // SIGKILL
	faultFreeze faultMode = "freeze" // SIGSTOP for lease + sync + 2s, then SIGCONT
)

// foPair is the two replicas of a failover test.
type foPair struct {
	replicas map[string]*cluster.AutoscalerReplica
	started  int
}

// startPair stops the package's single autoscaler (it would reconcile the
// test's objects too) and starts two replicas under leader election.
func startPair(t testing.TB) *foPair {
	t.Helper()
	env().StopAutoscaler()
	p := &foPair{replicas: map[string]*cluster.AutoscalerReplica{}}
	for range 2 {
		p.startOne(t)
	}
	t.Cleanup(func() {
		for _, r := range p.replicas {
			if t.Failed() {
				t.Logf("%s log tail:\n%s", r.Component, env().LogTail(r.Component, 40))
			}
			r.Stop()
		}
	})
	return p
}

// startOne starts a replica with a new identity.
func (p *foPair) startOne(t testing.TB) *cluster.AutoscalerReplica {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p.started++
	id := fmt.Sprintf("replica-%d", p.started)
	r, err := env().StartAutoscalerReplica(ctx, id, cluster.LeaderElection{
		Lease: foLeaseName, LeaseDuration: foLeaseDuration, RenewDeadline: foRenewDeadline, RetryPeriod: foRetryPeriod,
	}, cluster.AutoscalerOptions{Args: []string{"--horizontal-pod-autoscaler-sync-period=" + foSyncPeriod.String(), "--v=2"}})
	if err != nil {
		t.Fatal(err)
	}
	p.replicas[id] = r
	return r
}

// leader waits until the Lease names a live replica of the pair.
func (p *foPair) leader(t testing.TB) *cluster.AutoscalerReplica {
	t.Helper()
	var found *cluster.AutoscalerReplica
	_, err := pollUntil(time.Minute, func(ctx context.Context) bool {
		l, err := env().Client().CoordinationV1().Leases("ebbflow-system").Get(ctx, foLeaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false
		}
		r, ok := p.replicas[*l.Spec.HolderIdentity]
		if ok && !r.Exited() {
			found = r
		}
		return found != nil
	})
	if err != nil {
		t.Fatalf("no replica holds Lease %s: %v", foLeaseName, err)
	}
	return found
}

// scaleWrite is one change of the Deployment's spec.replicas seen on the watch.
type scaleWrite struct {
	at       time.Time
	replicas int32
	author   string // from the events; "" when none names this count
}

// leaseChange is a change of the Lease's holder seen on the watch.
type leaseChange struct {
	at     time.Time
	holder string
}

// recorder collects the Deployment's writes and the Lease's holders.
type recorder struct {
	mu     sync.Mutex
	writes []scaleWrite
	leases []leaseChange
	stop   func()
}

func record(t testing.TB, ns, name string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{}
	dw, err := env().Client().AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := env().Client().CoordinationV1().Leases("ebbflow-system").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + foLeaseName})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { r.readDeployments(dw) })
	wg.Go(func() { r.readLeases(lw) })
	r.stop = func() { dw.Stop(); lw.Stop(); cancel(); wg.Wait() }
	return r
}

func (r *recorder) readDeployments(w watch.Interface) {
	last := int32(-1)
	for ev := range w.ResultChan() {
		d, ok := ev.Object.(*appsv1.Deployment)
		if !ok {
			continue
		}
		if n := ptr.Deref(d.Spec.Replicas, 1); n != last {
			r.mu.Lock()
			if last >= 0 {
				r.writes = append(r.writes, scaleWrite{at: time.Now(), replicas: n})
			}
			r.mu.Unlock()
			last = n
		}
	}
}

func (r *recorder) readLeases(w watch.Interface) {
	last := ""
	for ev := range w.ResultChan() {
		l, ok := ev.Object.(*coordinationv1.Lease)
		if !ok {
			continue
		}
		h := ptr.Deref(l.Spec.HolderIdentity, "")
		if h != last {
			r.mu.Lock()
			r.leases = append(r.leases, leaseChange{at: time.Now(), holder: h})
			r.mu.Unlock()
			last = h
		}
	}
}

// rampAutoscaler is an Autoscaler on the queue's external metric, target
// AverageValue 10, that scales up at once (the ramp is the only limit).
func rampAutoscaler(name string, q testQueue) *v1alpha1.Autoscaler {
	rules := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0),
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 100, PeriodSeconds: 1}}}
	return &v1alpha1.Autoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.AutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: foMaxReplicas,
			Metrics:  []v1alpha1.MetricSpec{{MetricSpec: externalMetric(q, averageValue("10"))}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules},
		},
	}
}

// failover is the outcome of one round.
type failover struct {
	mode         faultMode
	oldLeader    string
	newLeader    string
	faultAt      time.Time
	acquired     time.Duration // fault → the Lease names the new leader
	firstWrite   time.Duration // fault → the new leader's first /scale write
	writes       []scaleWrite
	final        float64 // the metric at the end of the ramp
	finalWant    int32
	finalGot     int32
	oldExited    bool   // the old leader ended by itself (freeze: after SIGCONT)
	storedEvents string // the Autoscaler's status.scaleEvents at the end
}
