package controller

import (
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	core "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	ebbflowfake "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/fake"
	ebbflowinformers "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Identities of two replicas, as app.Config.Complete makes them.
const (
	replicaA = "ebbflow-autoscaler-6c9f7d-x2k4q_0b8e4f6a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
	replicaB = "ebbflow-autoscaler-6c9f7d-m7p2w_9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
)

// steadyWeb seeds 3 pods at their target: every evaluation decides the same
// (Unchanged), so only the identity can make the record change.
func steadyWeb(f *fixture, identity string) *autoscalingv2.HorizontalPodAutoscaler {
	f.cfg.Identity = identity
	f.target("web", 3, 3)
	f.pods("web", 3)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 10, 10, 10)}
	return newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
}

// The drop-in kind's record annotation names the replica that evaluated;
// a replica rewrites a record another one wrote once, then only when the
// outcome changes.
func TestHPARecordEvaluatedBy(t *testing.T) {
	first := newFixture(t)
	hpa := steadyWeb(first, replicaA)
	first.seedHPA(hpa)
	first.build()
	if _, err := first.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	recs := first.decisionPatches()
	if len(recs) != 1 || recs[0].EvaluatedBy != replicaA || recs[0].Outcome != v1alpha1.OutcomeUnchanged {
		t.Fatalf("first leader's records = %+v, want one Unchanged record by %s", recs, replicaA)
	}
	byA, err := evaluation.EncodeRecord(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	hpa.Status = first.statusUpdates()[0].Status
	hpa.Annotations = map[string]string{v1alpha1.LastDecisionAnnotation: byA}
	first.seedHPA(hpa)
	first.clock.Step(first.cfg.SyncPeriod)
	if _, err := first.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if recs := first.decisionPatches(); len(recs) != 0 {
		t.Errorf("same outcome, same replica: record rewritten %+v", recs)
	}

	// The other replica takes over: same outcome, but the record is by A.
	next := newFixture(t)
	steadyWeb(next, replicaB)
	next.seedHPA(hpa.DeepCopy())
	next.build()
	if _, err := next.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	recs = next.decisionPatches()
	if len(recs) != 1 || recs[0].EvaluatedBy != replicaB || evaluation.Signature(recs[0]) != evaluation.Signature(first.decodeStored(byA)) {
		t.Fatalf("new leader's records = %+v, want the same outcome by %s", recs, replicaB)
	}
	byB, err := evaluation.EncodeRecord(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	h := hpa.DeepCopy()
	h.Annotations[v1alpha1.LastDecisionAnnotation] = byB
	next.seedHPA(h)
	next.clock.Step(next.cfg.SyncPeriod)
	if _, err := next.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if recs := next.decisionPatches(); len(recs) != 0 {
		t.Errorf("new leader rewrote its own record: %+v", recs)
	}
}

func (f *fixture) decodeStored(raw string) *v1alpha1.DecisionRecord {
	rec, err := evaluation.DecodeRecord(raw)
	if err != nil {
		f.t.Fatal(err)
	}
	return rec
}

// An Autoscaler's status.lastDecision names the replica that evaluated; a new
// leader writes the status once to say so, then not again.
func TestAutoscalerRecordEvaluatedBy(t *testing.T) {
	var stored *v1alpha1.Autoscaler
	for _, step := range []struct {
		identity string
		writes   []string // evaluatedBy of each status write, per sync
	}{
		{replicaA, []string{replicaA, ""}},
		{replicaB, []string{replicaB, ""}},
	} {
		f := newFixture(t)
		hpa := steadyWeb(f, step.identity)
		a := stored
		if a == nil {
			a = &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)}
		}
		client := ebbflowfake.NewSimpleClientset(a)
		informer := ebbflowinformers.NewSharedInformerFactory(client, 0).Autoscaling().V1alpha1().Autoscalers()
		if err := informer.Informer().GetIndexer().Add(a); err != nil {
			t.Fatal(err)
		}
		f.build(NewAutoscalerKind(informer, client.AutoscalingV1alpha1()))
		for i, want := range step.writes {
			client.ClearActions()
			f.clock.Step(f.cfg.SyncPeriod)
			if _, err := f.sync("Autoscaler/ns/web"); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, act := range client.Actions() {
				if u, ok := act.(core.UpdateAction); ok && act.GetSubresource() == "status" {
					w := u.GetObject().(*v1alpha1.Autoscaler)
					got = append(got, w.Status.LastDecision.EvaluatedBy)
					stored = w.DeepCopy()
					if err := informer.Informer().GetIndexer().Update(w); err != nil {
						t.Fatal(err)
					}
				}
			}
			if strings.Join(got, ",") != want {
				t.Errorf("%s, sync %d: status writes with evaluatedBy %q, want %q", step.identity, i+1, got, want)
			}
		}
	}
}

// An identity too long for evaluatedBy is refused when the controller is
// built, not by the API server at every status write.
func TestIdentityTooLong(t *testing.T) {
	f := newFixture(t)
	f.cfg.Identity = strings.Repeat("x", v1alpha1.MaxEvaluatedBy+1)
	_, err := New(f.cfg, Deps{Pods: f.factory.Core().V1().Pods().Informer(), Recorder: f.recorder}, f.hpaKind())
	if err == nil || !strings.Contains(err.Error(), "Identity") {
		t.Fatalf("New with a %d-byte identity: %v, want an error naming Identity", len(f.cfg.Identity), err)
	}
	f.cfg.Identity = strings.Repeat("x", v1alpha1.MaxEvaluatedBy)
	f.build()
}
