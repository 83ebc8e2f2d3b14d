package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// ownedPod is a pod named name controlled by the apps/v1 owner kind/owner.
func ownedPod(name, kind, owner string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if kind != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: owner, Controller: ptr(true)}}
	}
	return p
}

func TestWorkloadOf(t *testing.T) {
	deploy := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	sts := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}
	rs := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7c5d"}
	rollout := autoscalingv2.CrossVersionObjectReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"}
	deployPods := metrics.WorkloadPods{Key: metrics.HistoryDeploymentPodsLabel, Name: "web"}
	for _, tc := range []struct {
		name    string
		ref     autoscalingv2.CrossVersionObjectReference
		pods    []*corev1.Pod
		want    metrics.WorkloadPods
		wantErr string
	}{
		{name: "deployment mid-rollout", ref: deploy, want: deployPods, pods: []*corev1.Pod{
			ownedPod("web-7c5ddbdf54-x2kzq", "ReplicaSet", "web-7c5ddbdf54"), ownedPod("web-6d4cf56db6-9xv8w", "ReplicaSet", "web-6d4cf56db6")}},
		{name: "rollout's replicasets", ref: rollout, want: deployPods, pods: []*corev1.Pod{ownedPod("web-7c5ddbdf54-x2kzq", "ReplicaSet", "web-7c5ddbdf54")}},
		{name: "statefulset", ref: sts, want: metrics.WorkloadPods{Key: metrics.HistoryStatefulSetPodsLabel, Name: "db"},
			pods: []*corev1.Pod{ownedPod("db-0", "StatefulSet", "db"), ownedPod("db-12", "StatefulSet", "db")}},
		{name: "replicaset", ref: rs, want: metrics.WorkloadPods{Key: metrics.HistoryReplicaSetPodsLabel, Name: "web-7c5d"},
			pods: []*corev1.Pod{ownedPod("web-7c5d-x2kzq", "ReplicaSet", "web-7c5d")}},
		{name: "deployment without pods", ref: deploy, want: deployPods},
		{name: "statefulset without pods", ref: sts, want: metrics.WorkloadPods{Key: metrics.HistoryStatefulSetPodsLabel, Name: "db"}},
		{name: "rollout without pods", ref: rollout, wantErr: "has no pods"},
		{name: "no controller", ref: deploy, pods: []*corev1.Pod{ownedPod("web-7c5ddbdf54-x2kzq", "", "")}, wantErr: "has no controller"},
		{name: "another workload's pods", ref: deploy, pods: []*corev1.Pod{
			ownedPod("web-7c5ddbdf54-x2kzq", "ReplicaSet", "web-7c5ddbdf54"), ownedPod("web-0", "StatefulSet", "web")}, wantErr: "different workloads"},
		{name: "replicaset of another deployment", ref: deploy, pods: []*corev1.Pod{ownedPod("web-api-7c5ddbdf54-x2kzq", "ReplicaSet", "web-api-7c5ddbdf54")}, wantErr: "is not named so"},
		{name: "name cut short", ref: deploy, pods: []*corev1.Pod{ownedPod("web-7c5ddbdf5x2kzq", "ReplicaSet", "web-7c5ddbdf54")}, wantErr: "is not named so"},
		{name: "statefulset pod not an ordinal", ref: sts, pods: []*corev1.Pod{ownedPod("db-x2kzq", "StatefulSet", "db")}, wantErr: "is not named so"},
		{name: "owner of another group", ref: deploy, pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "web-7c5ddbdf54-x2kzq",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.io/v1", Kind: "ReplicaSet", Name: "web-7c5ddbdf54", Controller: ptr(true)}}}}}, wantErr: "is not named so"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := workloadOf(tc.ref, tc.pods)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("workload %+v, error %v; want one saying %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("workload %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// A Pods metric's forecast reads the history of the Deployment's pods
// (named by the workload, not by today's pods) with the scale's pod
// selector, through the same cache, and floors the proposal.
func TestForecastPodsMetricGetsItsHistory(t *testing.T) {
	f, hc, client := forecastFixture(t, podsMetric("qps", "10"))
	idx := f.factory.Core().V1().Pods().Informer().GetIndexer()
	samples := replicas.Samples{}
	for i, name := range []string{"web-7c5ddbdf54-x2kzq", "web-7c5ddbdf54-b9v8w"} {
		old, _, _ := idx.GetByKey("ns/" + podName("web", i))
		p := old.(*corev1.Pod).DeepCopy()
		if err := idx.Delete(old); err != nil {
			t.Fatal(err)
		}
		p.Name = name
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7c5ddbdf54", Controller: ptr(true)}}
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
		samples[name] = replicas.Sample{Value: 20_000, Timestamp: start, Window: time.Minute}
	}
	f.metrics.Pods = map[string]replicas.Samples{"qps": samples}
	const key = "Autoscaler/ns/web"
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ns/pods{app=web}/qps{} history.ebbflow.dev/deployment-pods=web 169h0m0s 1m0s"}; !slices.Equal(hc.reads, want) || hc.nothing != 0 {
		t.Fatalf("history reads %q (%d refused), want %q", hc.reads, hc.nothing, want)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{10}) {
		t.Fatalf("scale updates %v, want [10]: the forecast's floor (100 over 10 a pod) over the reactive 4", got)
	}
	if c := lastForecasting(t, client); c.Status != corev1.ConditionTrue {
		t.Fatalf("Forecasting %+v", c)
	}
	// Cached as the other histories: read again once HistoryRefresh has passed.
	f.clock.Step(HistoryRefresh - time.Second)
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Second)
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := hc.readCount(); n != 2 {
		t.Fatalf("%d history reads after %v, want 2", n, HistoryRefresh)
	}
}
