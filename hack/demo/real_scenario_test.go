package main

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"

	easv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/test/loadgen"
)

func TestWebProfile(t *testing.T) {
	for _, d := range []time.Duration{time.Minute, realDuration, 7 * time.Minute} {
		steps := webProfile(d, 20)
		var total time.Duration
		peak := 0.0
		for i, s := range steps {
			if s.Duration <= 0 || s.RPS < baseRPS || s.RPS > 20 {
				t.Errorf("%v: step %d = %+v: want a positive duration and a rate within [%v, 20]", d, i, s, baseRPS)
			}
			total += s.Duration
			peak = max(peak, s.RPS)
		}
		if total != d {
			t.Errorf("%v: the profile lasts %v", d, total)
		}
		if peak != 20 || steps[0].RPS != baseRPS || steps[len(steps)-1].RPS != baseRPS {
			t.Errorf("%v: peak %v, first %v, last %v; want 20 and the base %v at both ends", d, peak, steps[0].RPS, steps[len(steps)-1].RPS, baseRPS)
		}
		// The tail at the base must outlast the scale-down window and the
		// adapter's rate window, or the workloads cannot come back down.
		if tail := steps[len(steps)-1].Duration; tail < 15*time.Second {
			t.Errorf("%v: tail %v, want ≥ 15s", d, tail)
		}
	}
}

func TestRateAt(t *testing.T) {
	steps := []loadgen.Step{{Duration: 10 * time.Second, RPS: 1}, {Duration: 5 * time.Second, RPS: 7}}
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{0, 1}, {9 * time.Second, 1}, {10 * time.Second, 7}, {14 * time.Second, 7}, {15 * time.Second, 0}, {time.Hour, 0}} {
		if got := rateAt(steps, c.at); got != c.want {
			t.Errorf("rateAt(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	if got := maxRequests(steps); got != 66 { // 56.25 → 56, plus 10
		t.Errorf("maxRequests = %d, want the profile's 45 requests and a quarter more, plus 10", got)
	}
}

// realObjects decodes the real-node demo's manifests as kubectl would.
func realObjects(t *testing.T) examples {
	t.Helper()
	objs, err := decodeAll([]byte(realManifests() + "---\n" + workerManifests("http://10.96.0.10")))
	if err != nil {
		t.Fatal(err)
	}
	return sortExamples(objs)
}

// TestRealManifests checks the objects the real-node demo applies: the HPA
// and the Autoscaler of the two web copies share one spec, the dry-run
// Autoscaler has it too on web-hpa's Deployment, the worker scales to zero
// on the queue, and every pod passes the restricted Pod Security Standard's
// main rules.
func TestRealManifests(t *testing.T) {
	e := realObjects(t)
	for _, name := range []string{webHPA, webEAS, queue, worker} {
		d := e.deployments[name]
		if d == nil {
			t.Fatalf("no Deployment %s", name)
		}
		checkRestricted(t, d)
		if d.Namespace != realNS {
			t.Errorf("%s in namespace %q, want %q", name, d.Namespace, realNS)
		}
	}
	h, eas, dry, wk := e.hpas[webHPA], e.autoscalers[webEAS], e.autoscalers[dryRun], e.autoscalers[worker]
	if h == nil || eas == nil || dry == nil || wk == nil || len(e.hpas) != 1 {
		t.Fatalf("hpas %v, autoscalers %v: want the HPA %s and the Autoscalers %s, %s, %s", e.hpas, e.autoscalers, webHPA, webEAS, dryRun, worker)
	}
	want := h.Spec.DeepCopy()
	want.ScaleTargetRef.Name = webEAS
	if got := easv1alpha1.ToHPASpec(&eas.Spec); !equality.Semantic.DeepEqual(got, *want) {
		t.Errorf("%s spec\n%+v\nwant %s's HPA spec with its own target\n%+v", webEAS, got, webHPA, *want)
	}
	if got := easv1alpha1.ToHPASpec(&dry.Spec); !dry.Spec.DryRun || !equality.Semantic.DeepEqual(got, h.Spec) {
		t.Errorf("%s: dryRun %t, spec\n%+v\nwant dry-run with %s's HPA spec\n%+v", dryRun, dry.Spec.DryRun, got, webHPA, h.Spec)
	}
	if wk.Spec.MinReplicas == nil || *wk.Spec.MinReplicas != 0 || wk.Spec.ScaleToZero == nil || wk.Spec.ScaleToZero.After == nil ||
		wk.Spec.ScaleToZero.After.Duration != idleBeforeZero {
		t.Errorf("worker Autoscaler: minReplicas %v, scaleToZero %+v; want 0 and after %v", wk.Spec.MinReplicas, wk.Spec.ScaleToZero, idleBeforeZero)
	}
	if len(wk.Spec.Metrics) != 1 || wk.Spec.Metrics[0].Type != autoscalingv2.ExternalMetricSourceType ||
		wk.Spec.Metrics[0].Activation == nil || !wk.Spec.Metrics[0].Activation.IsZero() {
		t.Errorf("worker metrics %+v: want one External metric with activation 0 (any message wakes it)", wk.Spec.Metrics)
	}
	args := e.deployments[worker].Spec.Template.Spec.Containers[0].Args
	if !containsArg(args, "--queue-url=http://10.96.0.10") {
		t.Errorf("worker args %v: want the queue's URL", args)
	}
}

func containsArg(args []string, a string) bool {
	for _, x := range args {
		if x == a {
			return true
		}
	}
	return false
}

// checkRestricted checks the restricted standard's rules that the
// namespace's admission would reject the Deployment's pods for.
func checkRestricted(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ps := d.Spec.Template.Spec
	if ps.SecurityContext == nil || ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot ||
		ps.SecurityContext.SeccompProfile == nil {
		t.Errorf("%s: pod security context %+v: want runAsNonRoot and a seccomp profile", d.Name, ps.SecurityContext)
	}
	for _, c := range ps.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
			len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s/%s: security context %+v: want no privilege escalation and every capability dropped", d.Name, c.Name, sc)
		}
	}
}

func TestShowDue(t *testing.T) {
	s := func(easSpec int32, dryOutcome easv1alpha1.Outcome, workerSpec int32) sample {
		return sample{W: map[string]workloadState{
			webEAS: {Seen: true, Spec: easSpec},
			dryRun: {Seen: true, Outcome: string(dryOutcome)},
			worker: {Seen: true, Spec: workerSpec},
		}}
	}
	if got := showDue(showcase{}, s(1, easv1alpha1.OutcomeUnchanged, 1)); got != (due{}) {
		t.Errorf("nothing happened yet: due %+v", got)
	}
	if got := showDue(showcase{}, s(3, easv1alpha1.OutcomeWouldScale, 0)); got != (due{explain: true, dryRun: true, wake: true}) {
		t.Errorf("scaled, would scale, at zero: due %+v, want all", got)
	}
	if got := showDue(showcase{explained: true, dryRunShown: true, enqueued: true}, s(3, easv1alpha1.OutcomeWouldScale, 0)); got != (due{}) {
		t.Errorf("everything shown once already: due %+v", got)
	}
	if got := showDue(showcase{}, sample{W: map[string]workloadState{}}); got != (due{}) {
		t.Errorf("nothing observed (a worker not read is not at zero): due %+v", got)
	}
}
