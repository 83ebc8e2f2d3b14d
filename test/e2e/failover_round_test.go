package e2e

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// foRamp is how long the metric grows; foFaultAfter is when the leader is
// hit (plus up to jitter).
const (
	foRamp       = 22 * time.Second
	foFaultAfter = 7 * time.Second
	foSettle     = 30 * time.Second
)

// runFailover runs one round on a fresh namespace: ramp, fault at
// foFaultAfter+jitter, then waits for the final count and attributes every
// write. The faulted replica is replaced by a fresh one afterwards, so the
// pair is whole for the next round.
func runFailover(t testing.TB, pair *foPair, mode faultMode, jitter time.Duration) failover {
	t.Helper()
	ns := newNamespace(t, "e2e-failover-")
	name := "ramp"
	createPendingDeployment(t, ns, name)
	q := setQueueTB(t, ns+"-q", foTarget)
	rec := record(t, ns, name)
	defer rec.stop()
	if _, err := ebb(t).AutoscalingV1alpha1().Autoscalers(ns).Create(context.Background(), rampAutoscaler(name, q), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create autoscaler: %v", err)
	}
	old := pair.leader(t)
	fo := failover{mode: mode, oldLeader: old.Identity}

	start := time.Now()
	rampDone := make(chan float64)
	go func() {
		v := foTarget
		for el := time.Duration(0); el < foRamp; el = time.Since(start) {
			v = foTarget + foRampPerSecond*el.Seconds()
			q.set(v)
			time.Sleep(200 * time.Millisecond)
		}
		q.set(v)
		rampDone <- v
	}()
	time.Sleep(foFaultAfter + jitter)
	fo.faultAt = time.Now()
	switch mode {
	case faultKill:
		old.Kill()
	case faultFreeze:
		old.Freeze()
		time.Sleep(foLeaseDuration + foSyncPeriod + 2*time.Second)
		old.Thaw()
	}
	fo.final = <-rampDone
	fo.finalWant = int32(math.Ceil(fo.final / foTarget))
	_, _ = pollUntil(foSettle, func(ctx context.Context) bool {
		r, err := deploymentReplicas(ctx, ns, name)
		return err == nil && withinTolerance(fo.final, r)
	})
	time.Sleep(2 * foSyncPeriod) // no write after the count settled
	fo.finalGot, _ = deploymentReplicas(context.Background(), ns, name)
	if a, err := getAutoscaler(context.Background(), ns, name); err == nil {
		fo.storedEvents = a.Status.ScaleEvents
	}
	if mode == faultFreeze {
		_, err := pollUntil(20*time.Second, func(context.Context) bool { return old.Exited() })
		fo.oldExited = err == nil
	}
	time.Sleep(time.Second) // the last events reach the API server
	rec.stop()
	fo.attribute(rec, rescaleAuthors(t, ns, name))
	delete(pair.replicas, old.Identity)
	old.Stop()
	pair.startOne(t)
	return fo
}

// attribute names each recorded write's author (from the events' counts),
// the new leader (the first other holder of the Lease after the fault) and
// the takeover times.
func (fo *failover) attribute(rec *recorder, authors map[int32][]string) {
	fo.writes = rec.writes
	for i := range fo.writes {
		if a := authors[fo.writes[i].replicas]; len(a) == 1 {
			fo.writes[i].author = a[0]
		} else if len(a) > 1 {
			fo.writes[i].author = strings.Join(a, "+")
		}
	}
	for _, l := range rec.leases {
		if l.at.After(fo.faultAt) && l.holder != "" && l.holder != fo.oldLeader {
			fo.newLeader, fo.acquired = l.holder, l.at.Sub(fo.faultAt)
			break
		}
	}
	for _, w := range fo.writes {
		if w.author == fo.newLeader && fo.newLeader != "" {
			fo.firstWrite = w.at.Sub(fo.faultAt)
			break
		}
	}
}

// problems lists what one controller would not have done: writes by two
// replicas for one count, a write nobody (or the wrong replica) made, writes
// closer than a sync period across replicas, a count going down during the
// ramp, a wrong final count, a late takeover.
func (fo failover) problems() []string {
	var out []string
	inFlight := fo.faultAt.Add(time.Second) // a write sent before the fault may be seen after it
	for i, w := range fo.writes {
		switch {
		case strings.Contains(w.author, "+"):
			out = append(out, fmt.Sprintf("%d replicas written by two replicas (%s)", w.replicas, w.author))
		case w.author == "" && (fo.mode != faultKill || w.at.After(inFlight)):
			out = append(out, fmt.Sprintf("write of %d replicas at +%v named by no event", w.replicas, w.at.Sub(fo.faultAt).Round(time.Millisecond)))
		case w.author != "" && w.at.Before(fo.faultAt) && w.author != fo.oldLeader:
			out = append(out, fmt.Sprintf("write of %d by %s while %s led", w.replicas, w.author, fo.oldLeader))
		case w.author != "" && w.at.After(inFlight) && w.author != fo.newLeader:
			out = append(out, fmt.Sprintf("write of %d at +%v by %s after the failover to %s", w.replicas, w.at.Sub(fo.faultAt).Round(time.Millisecond), w.author, fo.newLeader))
		}
		if i == 0 {
			continue
		}
		prev := fo.writes[i-1]
		if w.replicas < prev.replicas {
			out = append(out, fmt.Sprintf("count went down during the ramp: %d → %d", prev.replicas, w.replicas))
		}
		gap := w.at.Sub(prev.at)
		if prev.author != w.author && w.author != "" && prev.author != "" && gap < foSyncPeriod {
			out = append(out, fmt.Sprintf("writes by %s and %s %v apart (< one sync period)", prev.author, w.author, gap.Round(time.Millisecond)))
		}
		if prev.author == w.author && gap < foSyncPeriod*3/4 {
			out = append(out, fmt.Sprintf("two writes by %s %v apart (a double step)", w.author, gap.Round(time.Millisecond)))
		}
	}
	if fo.newLeader == "" {
		out = append(out, "no replica took the Lease over")
	} else if fo.firstWrite <= 0 || fo.firstWrite > foTakeoverBound {
		out = append(out, fmt.Sprintf("new leader's first write %v after the fault, want within %v (lease + sync period)", fo.firstWrite.Round(time.Millisecond), foTakeoverBound))
	}
	if !withinTolerance(fo.final, fo.finalGot) {
		out = append(out, fmt.Sprintf("final count %d for the metric at %v: not within the tolerance (0.1) of %d", fo.finalGot, fo.final, fo.finalWant))
	}
	if fo.storedEvents == "" {
		out = append(out, "status.scaleEvents is empty after the rescales")
	}
	if fo.mode == faultFreeze && !fo.oldExited {
		out = append(out, "the thawed old leader did not stop by itself")
	}
	return out
}

func (fo failover) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s → %s: Lease taken after %v, first write after %v; writes:", fo.mode, fo.oldLeader, fo.newLeader,
		fo.acquired.Round(time.Millisecond), fo.firstWrite.Round(time.Millisecond))
	for _, w := range fo.writes {
		fmt.Fprintf(&b, " %+.1fs:%d(%s)", w.at.Sub(fo.faultAt).Seconds(), w.replicas, w.author)
	}
	return b.String()
}

var newSize = regexp.MustCompile(`New size: (\d+);`)

// withinTolerance reports whether n replicas leave the metric's ratio to
// its target (AverageValue foTarget per replica) within the HPA tolerance
// 0.1, where one controller stops scaling.
func withinTolerance(metric float64, n int32) bool {
	return n > 0 && math.Abs(metric/(foTarget*float64(n))-1) <= 0.1
}

// rescaleAuthors maps each count a SuccessfulRescale event of the
// Autoscaler names to the replicas that reported it.
func rescaleAuthors(t testing.TB, ns, name string) map[int32][]string {
	t.Helper()
	evs, err := env().Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	out := map[int32][]string{}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind != "Autoscaler" || e.InvolvedObject.Name != name || e.Reason != "SuccessfulRescale" {
			continue
		}
		m := newSize.FindStringSubmatch(e.Message)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		inst := e.ReportingInstance
		if inst == "" {
			inst = e.Source.Host
		}
		out[int32(n)] = append(out[int32(n)], inst)
	}
	return out
}

// createPendingDeployment creates a Deployment whose pods stay Pending (no
// nodeName, no scheduler): a scale target that costs kwok nothing.
func createPendingDeployment(t testing.TB, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10"}}}}},
	}
	if _, err := env().Client().AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
}

// setQueueTB is setQueue for benchmarks too.
func setQueueTB(t testing.TB, name string, v float64) testQueue {
	q := testQueue{name: name}
	q.set(v)
	t.Cleanup(func() { exp().Delete(QueueGauge, map[string]string{"queue": q.name}) })
	return q
}
