package controller

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	core "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	ebbflowfake "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/fake"
	ebbflowinformers "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// decisionPatches returns the records written to the last-decision
// annotation.
func (f *fixture) decisionPatches() []*v1alpha1.DecisionRecord {
	var out []*v1alpha1.DecisionRecord
	for _, a := range f.kube.Actions() {
		p, ok := a.(core.PatchAction)
		if !ok {
			continue
		}
		var body struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
			f.t.Fatal(err)
		}
		rec, err := evaluation.DecodeRecord(body.Metadata.Annotations[v1alpha1.LastDecisionAnnotation])
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

// webHPA seeds the usual scale-up case (2 pods at twice the target) with
// annotations.
func webHPA(f *fixture, annotations map[string]string) *autoscalingv2.HorizontalPodAutoscaler {
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	hpa := newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
	hpa.Annotations = annotations
	f.seedHPA(hpa)
	return hpa
}

func TestDryRunAnnotation(t *testing.T) {
	f := newFixture(t)
	hpa := webHPA(f, map[string]string{v1alpha1.DryRunAnnotation: "true"})
	f.build()

	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Fatalf("dry run wrote the scale: %v", got)
	}
	if got, want := f.events(), []string{"Normal DryRunRescale would scale from 2 to 4"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	updates := f.statusUpdates()
	if len(updates) != 1 {
		t.Fatalf("status writes = %d", len(updates))
	}
	st := updates[0].Status
	if st.DesiredReplicas != 4 || st.CurrentReplicas != 2 || st.LastScaleTime != nil {
		t.Errorf("status = %+v", st)
	}
	wantCondition(t, st, "DryRun", corev1.ConditionTrue, "DryRun", "dry run: would scale from 2 to 4")
	recs := f.decisionPatches()
	if len(recs) != 1 {
		t.Fatalf("record writes = %d, want 1", len(recs))
	}
	r := recs[0]
	if r.Outcome != v1alpha1.OutcomeWouldScale || r.DesiredReplicas != 4 || r.Scaled || r.NotScaledReason != "dry run" ||
		len(r.Steps) != 1 || r.Steps[0].Stage != "DryRun" || r.WinningMetric != "qps" {
		t.Errorf("record = %+v", r)
	}

	// The same evaluation again: the outcome did not change, nothing is written.
	hpa.Status = st
	hpa.Annotations[v1alpha1.LastDecisionAnnotation], _ = evaluation.EncodeRecord(r)
	f.seedHPA(hpa)
	f.clock.Step(f.cfg.SyncPeriod)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if n, m := len(f.statusUpdates()), len(f.decisionPatches()); n != 0 || m != 0 {
		t.Errorf("unchanged outcome wrote status %d times and the record %d times", n, m)
	}
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Fatalf("dry run wrote the scale: %v", got)
	}

	// Dry run off: the next evaluation does what the record predicted.
	delete(hpa.Annotations, v1alpha1.DryRunAnnotation)
	f.seedHPA(hpa)
	f.clock.Step(f.cfg.SyncPeriod)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{r.DesiredReplicas}) {
		t.Errorf("after dry run: scale writes %v, want [%d]", got, r.DesiredReplicas)
	}
	st = f.statusUpdates()[0].Status
	wantCondition(t, st, "DryRun", corev1.ConditionFalse, "DryRunOff", "decisions are applied")
}

func TestPausedAnnotation(t *testing.T) {
	f := newFixture(t)
	webHPA(f, map[string]string{v1alpha1.PausedAnnotation: "true"})
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Fatalf("paused wrote the scale: %v", got)
	}
	if got := f.events(); len(got) != 0 {
		t.Errorf("events = %q", got)
	}
	st := f.statusUpdates()[0].Status
	wantCondition(t, st, "Paused", corev1.ConditionTrue, "Paused", "scale writes are paused; would scale from 2 to 4")
	wantCondition(t, st, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from pods metric qps")
	if r := f.decisionPatches(); len(r) != 1 || r[0].NotScaledReason != "paused" {
		t.Errorf("record = %+v", r)
	}
}

func TestInvalidAnnotationIsFalseWithWarning(t *testing.T) {
	f := newFixture(t)
	webHPA(f, map[string]string{v1alpha1.PausedAnnotation: "yes"})
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{4}) {
		t.Errorf("scale writes = %v, want [4]", got)
	}
	events := f.events()
	if len(events) != 2 || !strings.HasPrefix(events[1], "Warning InvalidAnnotation annotation autoscaling.ebbflow.dev/paused has the invalid value \"yes\"") {
		t.Errorf("events = %q", events)
	}
	for _, c := range f.statusUpdates()[0].Status.Conditions {
		if c.Type == "Paused" || c.Type == "DryRun" {
			t.Errorf("condition %s set although the extension was never on", c.Type)
		}
	}
}

// An Autoscaler's record goes out with its status and adds no write of its
// own; a dry-run Autoscaler says what it would do.
func TestAutoscalerRecordRidesWithStatus(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	hpa := newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
	a := &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)}
	a.Spec.DryRun = true
	client := ebbflowfake.NewSimpleClientset(a)
	informer := ebbflowinformers.NewSharedInformerFactory(client, 0).Autoscaling().V1alpha1().Autoscalers()
	if err := informer.Informer().GetIndexer().Add(a); err != nil {
		t.Fatal(err)
	}
	f.build(NewAutoscalerKind(informer, client.AutoscalingV1alpha1()))
	written := func() []*v1alpha1.Autoscaler {
		var out []*v1alpha1.Autoscaler
		for _, act := range client.Actions() {
			if u, ok := act.(core.UpdateAction); ok && act.GetSubresource() == "status" {
				out = append(out, u.GetObject().(*v1alpha1.Autoscaler))
			}
		}
		client.ClearActions()
		return out
	}
	if _, err := f.sync("Autoscaler/ns/web"); err != nil {
		t.Fatal(err)
	}
	w := written()
	if len(w) != 1 || w[0].Status.LastDecision == nil {
		t.Fatalf("status writes = %d (record %v)", len(w), w)
	}
	rec := w[0].Status.LastDecision
	if rec.Outcome != v1alpha1.OutcomeWouldScale || rec.DesiredReplicas != 4 || len(f.scaleUpdates()) != 0 {
		t.Errorf("record = %+v, scale writes %v", rec, f.scaleUpdates())
	}
	for _, act := range client.Actions() {
		if act.GetVerb() == "patch" {
			t.Errorf("Autoscaler record patched: %v", act)
		}
	}
	// Same inputs again: nothing changed, nothing written.
	if err := informer.Informer().GetIndexer().Update(w[0]); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(f.cfg.SyncPeriod)
	if _, err := f.sync("Autoscaler/ns/web"); err != nil {
		t.Fatal(err)
	}
	if w := written(); len(w) != 0 {
		t.Errorf("unchanged evaluation wrote the status %d times", len(w))
	}
}
