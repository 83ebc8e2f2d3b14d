package controller

import (
	"slices"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	ebbflowfake "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/fake"
	ebbflowinformers "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// An Autoscaler is evaluated like the equal HPA; its status is written
// through its own status subresource.
func TestAutoscalerKind(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	hpa := newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
	a := &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)}
	client := ebbflowfake.NewSimpleClientset(a)
	factory := ebbflowinformers.NewSharedInformerFactory(client, 0)
	informer := factory.Autoscaling().V1alpha1().Autoscalers()
	if err := informer.Informer().GetIndexer().Add(a); err != nil {
		t.Fatal(err)
	}
	f.build(NewAutoscalerKind(informer, client.AutoscalingV1alpha1()))

	if _, err := f.sync("Autoscaler/ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("scale updates = %v, want [4]", got)
	}
	var written []*v1alpha1.Autoscaler
	for _, act := range client.Actions() {
		if u, ok := act.(core.UpdateAction); ok && act.GetSubresource() == "status" {
			written = append(written, u.GetObject().(*v1alpha1.Autoscaler))
		}
	}
	if len(written) != 1 {
		t.Fatalf("status writes = %d, want 1", len(written))
	}
	st := v1alpha1.ToHPAStatus(&written[0].Status)
	if st.CurrentReplicas != 2 || st.DesiredReplicas != 4 || st.LastScaleTime == nil || !st.LastScaleTime.Equal(&metav1.Time{Time: start}) {
		t.Errorf("status = %+v", st)
	}
	wantCondition(t, st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", "the HPA controller was able to update the target scale to 4")
	if n := len(f.statusUpdates()); n != 0 {
		t.Errorf("%d HPA status writes for an Autoscaler", n)
	}
	if got := f.events(); len(got) != 1 || got[0] != "Normal SuccessfulRescale New size: 4; reason: pods metric qps above target" {
		t.Errorf("events = %q", got)
	}
}
