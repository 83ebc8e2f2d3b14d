package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/cluster"
)

// rampStep is one value of a queue ramp, held for a while.
type rampStep struct {
	value float64
	hold  time.Duration
}

// replicaWatch records the Deployment's spec.replicas every second (the
// scale writes) until stopped, and once more when stopped, as the list of
// distinct values in order.
type replicaWatch struct {
	mu     sync.Mutex
	values []int32
	errs   int
	stop   chan struct{}
	done   chan struct{}
}

func watchReplicas(ns, name string) *replicaWatch {
	w := &replicaWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			w.poll(ns, name)
			select {
			case <-w.stop:
				// Once more: what the caller saw before ending is recorded
				// too, even if it came after the last tick.
				w.poll(ns, name)
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// poll reads the Deployment's replicas once and records a change.
func (w *replicaWatch) poll(ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := deploymentReplicas(ctx, ns, name)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil:
		w.errs++
	case len(w.values) == 0 || w.values[len(w.values)-1] != r:
		w.values = append(w.values, r)
	}
}

// seen returns the distinct values recorded so far.
func (w *replicaWatch) seen() []int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.values)
}

// end stops the watch and returns what it recorded.
func (w *replicaWatch) end() []int32 {
	close(w.stop)
	<-w.done
	return w.seen()
}

// playRamp sets the queue to each step's value for its hold time.
func playRamp(q testQueue, steps []rampStep) {
	for _, s := range steps {
		q.set(s.value)
		time.Sleep(s.hold)
	}
}

// createExtensionAutoscaler creates Autoscaler "web" for Deployment "web"
// scaling on the queue's depth at 10 per replica (1 to 10 replicas) with the
// given behavior and extensions.
func createExtensionAutoscaler(t *testing.T, c ebbclient.Interface, ns string, q testQueue, b *autoscalingv2.HorizontalPodAutoscalerBehavior, paused, dryRun bool) {
	t.Helper()
	spec := hpaSpec(1, 10, b, externalMetric(q, averageValue("10")))
	spec.ScaleTargetRef.Name = "web"
	a := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1test.FromHPASpec(&spec)}
	a.Spec.Paused, a.Spec.DryRun = paused, dryRun
	if _, err := c.AutoscalingV1alpha1().Autoscalers(ns).Create(context.Background(), a, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create autoscaler %s/web: %v", ns, err)
	}
}

// patchSpec merges a JSON patch of the spec into Autoscaler ns/web.
func patchSpec(t *testing.T, c ebbclient.Interface, ns, specJSON string) {
	t.Helper()
	if _, err := c.AutoscalingV1alpha1().Autoscalers(ns).Patch(context.Background(), "web", types.MergePatchType,
		[]byte(`{"spec":`+specJSON+`}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch autoscaler %s/web spec with %s: %v", ns, specJSON, err)
	}
}

// autoscalerCondition returns condition typ of Autoscaler ns/web.
func autoscalerCondition(t *testing.T, c ebbclient.Interface, ns string, typ string) (autoscalingv2.HorizontalPodAutoscalerCondition, bool) {
	t.Helper()
	a, err := c.AutoscalingV1alpha1().Autoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get autoscaler %s/web: %v", ns, err)
	}
	for _, cd := range a.Status.Conditions {
		if string(cd.Type) == typ {
			return cd, true
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}, false
}

// eventMessages returns the messages of the events with reason on
// Autoscaler ns/web.
func eventMessages(t *testing.T, ns, reason string) []string {
	t.Helper()
	evs, err := env().Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, e := range evs.Items {
		if e.Reason == reason && e.InvolvedObject.Kind == "Autoscaler" && e.InvolvedObject.Name == "web" {
			out = append(out, e.Message)
		}
	}
	return out
}

func startExtensionsTest(t *testing.T, prefix string) (ebbclient.Interface, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := env().StartAutoscaler(ctx, cluster.AutoscalerOptions{HPAMode: "off", Args: []string{"--v=2"}}); err != nil {
		t.Fatalf("start ebbflow-autoscaler: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ebbflow-autoscaler log tail:\n%s", env().LogTail(cluster.Autoscaler, 60))
		}
	})
	ns := newNamespace(t, prefix)
	createDeployment(t, ns, "web")
	return ebbflowClient(t), ns
}

// TestDryRun: a dry-run Autoscaler never writes the scale over a load ramp
// (the Deployment is checked every second) while its record, its DryRun
// condition and its DryRunRescale events say what it would do; switched
// off, its next evaluation scales to what the record predicted.
func TestDryRun(t *testing.T) {
	t.Parallel()
	ebb, ns := startExtensionsTest(t, "e2e-dryrun-")
	q := setQueue(t, ns+"-q", 5)
	createExtensionAutoscaler(t, ebb, ns, q, wideBehavior(), false, true)
	w := watchReplicas(ns, "web")
	// 1, 3, 5, 7 replicas' worth of queue, each over two sync periods.
	playRamp(q, []rampStep{{5, 10 * time.Second}, {25, 10 * time.Second}, {45, 10 * time.Second}, {65, 0}})
	rec := waitDecision(t, ebb, ns, "web", "WouldScale 1 → 7", func(r *v1alpha1.DecisionRecord) bool {
		return r.Outcome == v1alpha1.OutcomeWouldScale && r.CurrentReplicas == 1 && r.DesiredReplicas == 7
	})
	if got := w.end(); !slices.Equal(got, []int32{1}) {
		t.Fatalf("dry run wrote the scale: the Deployment had replicas %v, want only [1]", got)
	}
	if rec.Scaled || rec.NotScaledReason != "dry run" || !hasStep(rec, "DryRun", 7, 1) ||
		rec.WinningMetric != QueueGauge || ptr.Deref(rec.Proposal, 0) != 7 {
		t.Errorf("record %+v: want proposal 7 from %s, a DryRun step 7 → 1, not scaled because of the dry run", *rec, QueueGauge)
	}
	if c, ok := autoscalerCondition(t, ebb, ns, "DryRun"); !ok || c.Status != corev1.ConditionTrue ||
		!strings.Contains(c.Message, "would scale from 1 to 7") {
		t.Errorf("condition DryRun = %+v, want True saying it would scale from 1 to 7", c)
	}
	events := eventMessages(t, ns, "DryRunRescale")
	for _, want := range []string{"would scale from 1 to 3", "would scale from 1 to 7"} {
		if !slices.Contains(events, want) {
			t.Errorf("DryRunRescale events %q: none says %q", events, want)
		}
	}

	// Live again: the next evaluation does what the record said.
	w = watchReplicas(ns, "web")
	patchSpec(t, ebb, ns, `{"dryRun":false}`)
	waitReplicas(t, ns, "web", scaleUpTimeout, "a scale write", func(r int32) bool { return r != 1 })
	if got := w.end(); !slices.Equal(got[:min(2, len(got))], []int32{1, rec.DesiredReplicas}) {
		t.Errorf("after dry run: replicas %v, want 1 then the %d the dry-run record predicted", got, rec.DesiredReplicas)
	}
	rescaled := eventMessages(t, ns, "SuccessfulRescale")
	if want := fmt.Sprintf("New size: %d; ", rec.DesiredReplicas); len(rescaled) != 1 || !strings.HasPrefix(rescaled[0], want) {
		t.Errorf("SuccessfulRescale events %q, want one, starting with %q", rescaled, want)
	}
	if c, ok := autoscalerCondition(t, ebb, ns, "DryRun"); ok && c.Status != corev1.ConditionFalse {
		t.Errorf("condition DryRun = %+v after dry run was switched off", c)
	}
}

// TestPause: a paused Autoscaler holds its target through a load ramp while
// its record and its Paused condition say what it would do; unpaused, it
// goes on from the current replicas through the scale-up policy (1 pod per
// 12s): one replica at a time, no jump to the proposal.
func TestPause(t *testing.T) {
	t.Parallel()
	ebb, ns := startExtensionsTest(t, "e2e-pause-")
	q := setQueue(t, ns+"-q", 15)
	onePodPer12s := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0),
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 12}},
		},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
	}
	createExtensionAutoscaler(t, ebb, ns, q, onePodPer12s, true, false)
	w := watchReplicas(ns, "web")
	playRamp(q, []rampStep{{15, 10 * time.Second}, {35, 10 * time.Second}, {55, 0}})
	rec := waitDecision(t, ebb, ns, "web", "WouldScale 1 → 2 (proposal 6)", func(r *v1alpha1.DecisionRecord) bool {
		return r.Outcome == v1alpha1.OutcomeWouldScale && r.CurrentReplicas == 1 && ptr.Deref(r.Proposal, 0) == 6
	})
	if got := w.end(); !slices.Equal(got, []int32{1}) {
		t.Fatalf("paused autoscaler wrote the scale: the Deployment had replicas %v, want only [1]", got)
	}
	if rec.DesiredReplicas != 2 || !hasStep(rec, "ScaleUpPolicy", 6, 2) || !hasStep(rec, "Paused", 2, 1) || rec.NotScaledReason != "paused" {
		t.Errorf("record %+v: want 6 limited to 2 by the policy, then held at 1 by the pause", *rec)
	}
	if c, ok := autoscalerCondition(t, ebb, ns, "Paused"); !ok || c.Status != corev1.ConditionTrue {
		t.Errorf("condition Paused = %+v, want True", c)
	}

	w = watchReplicas(ns, "web")
	patchSpec(t, ebb, ns, `{"paused":false}`)
	waitReplicas(t, ns, "web", scaleUpTimeout, "at least 3", func(r int32) bool { return r >= 3 })
	got := w.end()
	if !slices.Equal(got[:min(3, len(got))], []int32{1, 2, 3}) {
		t.Errorf("after unpause: replicas %v, want 1, 2, 3 (one pod per 12s), no jump", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i]-got[i-1] != 1 {
			t.Errorf("after unpause: replicas %v jump from %d to %d past the policy", got, got[i-1], got[i])
		}
	}
	if c, ok := autoscalerCondition(t, ebb, ns, "Paused"); ok && c.Status != corev1.ConditionFalse {
		t.Errorf("condition Paused = %+v after unpause", c)
	}
	t.Logf("paused record: %s; after unpause: %v", stepsText(rec), got)
}

func stepsText(r *v1alpha1.DecisionRecord) string {
	var parts []string
	for _, s := range r.Steps {
		parts = append(parts, fmt.Sprintf("%s %d→%d", s.Stage, s.From, s.To))
	}
	return fmt.Sprintf("proposal %d, %s, desired %d", ptr.Deref(r.Proposal, 0), strings.Join(parts, ", "), r.DesiredReplicas)
}
