package realnode

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	ebbflowclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
)

// handoverAutoscaler is testWorkload's Autoscaler: it exists and is evaluated
// every sync period when the handover starts.
const handoverAutoscaler = "web-ebbflow"

// testLeaderHandover deletes the pod that holds the autoscaler's Lease (a
// graceful stop: the leader releases the Lease); see handOver.
func testLeaderHandover(ctx context.Context, t *testing.T) {
	handOver(ctx, t, "deleting", func(ctx context.Context, t *testing.T, pod string) {
		if err := env.C.Client().CoreV1().Pods(chartNS).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete leader pod %s: %v", pod, err)
		}
	})
}

// handOver stops the leader with stop (given the pod of the Lease's holder)
// and checks the handover: another replica (or, after a kill, the stopped
// one's restarted container: a new identity) takes the Lease over within
// the lease duration plus a margin, and what the Autoscaler shows says who
// wrote, never both at once: its decision record
// (status.lastDecision.evaluatedBy) and its scale events (source.host) are
// the old leader's until the new leader's first evaluation and the new
// leader's after it. A rescale on each side of the handover (minReplicas
// raised by one, then by one more) gives each leader a scale event. It
// returns how long after stop returned the Lease had a new holder.
func handOver(ctx context.Context, t *testing.T, how string, stop func(ctx context.Context, t *testing.T, pod string)) time.Duration {
	holder, _, err := leaseHolder(ctx)
	if err != nil || holder == "" {
		t.Fatalf("lease holder %q: %v", holder, err)
	}
	ebbflow, err := ebbflowclient.NewForConfig(env.C.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	autoscalers := ebbflow.AutoscalingV1alpha1().Autoscalers(appNS)
	dep, err := env.C.Client().AppsV1().Deployments(appNS).Get(ctx, handoverAutoscaler, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := *dep.Spec.Replicas

	// The old leader rescales to r+1 and records it.
	setMinReplicas(ctx, t, ebbflow, r+1)
	before := waitRecord(ctx, t, ebbflow, "the old leader's rescale", func(rec *v1alpha1.DecisionRecord) bool {
		return rec.EvaluatedBy == holder && rec.DesiredReplicas == r+1 && rec.CurrentReplicas == r+1
	})
	t.Logf("the leader %s rescaled %d → %d; its record since: %s", holder, r, r+1, before.Status.LastDecision.Outcome)
	w, err := autoscalers.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", handoverAutoscaler).String(),
		ResourceVersion: before.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	seen := collectRecords(w)
	defer w.Stop()

	pod := strings.SplitN(holder, "_", 2)[0]
	stop(ctx, t, pod)
	t0 := time.Now()
	var next string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		next, _, _ = leaseHolder(ctx)
		return next != "" && next != holder, nil
	})
	if err != nil {
		t.Fatalf("no new leader 45 s after %s %s (holder now %q)", how, pod, next)
	}
	took := time.Since(t0)
	t.Logf("leader %s → %s in %v after %s its pod", holder, next, took.Round(100*time.Millisecond), how)

	// The new leader's first evaluation rewrites the record in its name,
	// then it rescales to r+2.
	first := waitRecord(ctx, t, ebbflow, "the new leader's first record", func(rec *v1alpha1.DecisionRecord) bool { return rec.EvaluatedBy == next })
	t.Logf("first record by the new leader %v after %s the leader's pod (record time, to the second)", first.Status.LastDecision.Time.Sub(t0).Round(time.Second), how)
	setMinReplicas(ctx, t, ebbflow, r+2)
	waitRecord(ctx, t, ebbflow, "the new leader's rescale", func(rec *v1alpha1.DecisionRecord) bool {
		return rec.EvaluatedBy == next && rec.DesiredReplicas == r+2 && rec.CurrentReplicas == r+2
	})
	time.Sleep(15 * time.Second) // three sync periods for a late write to show
	// minReplicas stays at r+2.
	w.Stop()
	checkRecordSequence(t, <-seen, holder, next)
	checkScaleEvents(ctx, t, holder, next, first.Status.LastDecision.Time.Time)
	waitDeploymentReady(ctx, t, chartNS, scalerDepl, 2*time.Minute)
	return took
}

// setMinReplicas patches the handover Autoscaler's minReplicas (and raises
// maxReplicas to fit).
func setMinReplicas(ctx context.Context, t *testing.T, c ebbflowclient.Interface, n int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"minReplicas":%d,"maxReplicas":%d}}`, n, max(n, 6))
	if _, err := c.AutoscalingV1alpha1().Autoscalers(appNS).Patch(ctx, handoverAutoscaler, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("set minReplicas of %s to %d: %v", handoverAutoscaler, n, err)
	}
}

// waitRecord waits up to 90 s until the handover Autoscaler's record
// satisfies ok, and returns the Autoscaler.
func waitRecord(ctx context.Context, t *testing.T, c ebbflowclient.Interface, what string, ok func(*v1alpha1.DecisionRecord) bool) *v1alpha1.Autoscaler {
	t.Helper()
	var a *v1alpha1.Autoscaler
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := c.AutoscalingV1alpha1().Autoscalers(appNS).Get(ctx, handoverAutoscaler, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		a = got
		return got.Status.LastDecision != nil && ok(got.Status.LastDecision), nil
	})
	if err != nil {
		var rec *v1alpha1.DecisionRecord
		if a != nil {
			rec = a.Status.LastDecision
		}
		t.Fatalf("%s: not within 90 s; record %+v", what, rec)
	}
	return a
}

// collectRecords gathers the evaluatedBy of every version of the Autoscaler
// the watch delivers, in order, until it is stopped.
func collectRecords(w watch.Interface) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		var by []string
		for e := range w.ResultChan() {
			if a, ok := e.Object.(*v1alpha1.Autoscaler); ok && a.Status.LastDecision != nil {
				by = append(by, a.Status.LastDecision.EvaluatedBy)
			}
		}
		out <- by
	}()
	return out
}

// checkRecordSequence: from the handover on, the records were the old
// leader's, then the new leader's, and never the old one's again.
func checkRecordSequence(t *testing.T, by []string, old, next string) {
	t.Helper()
	i := slices.Index(by, next)
	if i < 0 {
		t.Errorf("the watch saw no record by the new leader %s: %q", next, by)
		return
	}
	for j, b := range by {
		if (j < i && b != old) || (j > i && b != next) {
			t.Errorf("records by %q: want %s's, then only %s's", by, old, next)
			return
		}
	}
	t.Logf("%d record writes seen: %d by the old leader, then %d by the new one", len(by), i, len(by)-i)
}

// checkScaleEvents reads the handover Autoscaler's events by
// ebbflow-autoscaler: each leader recorded a rescale, every event of the
// old leader is older than the first of the new one (to the second, the
// precision of event timestamps), none of the old leader is newer than the
// new leader's first record, and no third replica recorded any since.
func checkScaleEvents(ctx context.Context, t *testing.T, old, next string, newFirst time.Time) {
	t.Helper()
	list, err := env.C.Client().CoreV1().Events(appNS).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Autoscaler", "involvedObject.name": handoverAutoscaler}.String()})
	if err != nil {
		t.Fatal(err)
	}
	byHost := map[string][]corev1.Event{}
	for _, e := range list.Items {
		if e.Source.Component == "ebbflow-autoscaler" {
			byHost[e.Source.Host] = append(byHost[e.Source.Host], e)
		}
	}
	rescaled := func(es []corev1.Event) bool {
		return slices.ContainsFunc(es, func(e corev1.Event) bool { return e.Reason == "SuccessfulRescale" })
	}
	if !rescaled(byHost[old]) || !rescaled(byHost[next]) {
		t.Fatalf("want a SuccessfulRescale event by each leader; events by host: %v", eventSummary(byHost))
	}
	firstNew := byHost[next][0].FirstTimestamp.Time
	for _, e := range byHost[next] {
		if e.FirstTimestamp.Before(&metav1.Time{Time: firstNew}) {
			firstNew = e.FirstTimestamp.Time
		}
	}
	for _, e := range byHost[old] {
		if e.LastTimestamp.After(firstNew) || e.LastTimestamp.After(newFirst) {
			t.Errorf("the old leader %s recorded %s %q at %v, after the new leader's first event (%v) or record (%v)",
				old, e.Reason, e.Message, e.LastTimestamp.UTC(), firstNew.UTC(), newFirst.UTC())
		}
	}
	for host, es := range byHost {
		if host == old || host == next {
			continue
		}
		for _, e := range es {
			if !e.LastTimestamp.Time.Before(firstNew) {
				t.Errorf("a third replica %s recorded %s %q at %v, after the handover", host, e.Reason, e.Message, e.LastTimestamp.UTC())
			}
		}
	}
	t.Logf("events by host: %v", eventSummary(byHost))
}

func eventSummary(byHost map[string][]corev1.Event) map[string][]string {
	out := map[string][]string{}
	for host, es := range byHost {
		for _, e := range es {
			out[host] = append(out[host], fmt.Sprintf("%s×%d %s..%s", e.Reason, e.Count, e.FirstTimestamp.UTC().Format(time.TimeOnly), e.LastTimestamp.UTC().Format(time.TimeOnly)))
		}
	}
	return out
}
