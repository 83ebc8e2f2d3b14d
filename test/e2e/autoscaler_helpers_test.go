package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/cluster"
)

// Helpers for ebbflow Autoscaler objects, as hpa_test.go's for HPAs.

func ebbClient(t *testing.T) ebbclient.Interface {
	t.Helper()
	client, err := ebbclient.NewForConfig(env().RESTConfig())
	if err != nil {
		t.Fatalf("ebbflow clientset: %v", err)
	}
	return client
}

func getAutoscaler(ctx context.Context, ns, name string) (*v1alpha1.Autoscaler, error) {
	client, err := ebbclient.NewForConfig(env().RESTConfig())
	if err != nil {
		return nil, err
	}
	return client.AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, name, metav1.GetOptions{})
}

// waitAutoscalerReason polls the Autoscaler until condition typ has
// status and a reason starting with reason.
func waitAutoscalerReason(t *testing.T, ns, name string, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason string) {
	t.Helper()
	waitUntil(t, hpaPollInterval, conditionTimeout, fmt.Sprintf("%s/%s: no condition %s=%s with reason %s*", ns, name, typ, status, reason),
		func() string { return autoscalerStatus(ns, name) }, func(ctx context.Context) bool {
			a, err := getAutoscaler(ctx, ns, name)
			if err != nil {
				return false
			}
			for _, c := range a.Status.Conditions {
				if c.Type == typ && c.Status == status && strings.HasPrefix(c.Reason, reason) {
					t.Logf("%s/%s: %s=%s (%s: %s)", ns, name, typ, c.Status, c.Reason, c.Message)
					return true
				}
			}
			return false
		})
}

// waitDecisionStep polls the Autoscaler until its last decision has a step
// of stage whose message contains text.
func waitDecisionStep(t *testing.T, ns, name, stage, text string) {
	t.Helper()
	waitUntil(t, hpaPollInterval, conditionTimeout, fmt.Sprintf("%s/%s: no decision step %s (%q)", ns, name, stage, text),
		func() string { return autoscalerStatus(ns, name) }, func(ctx context.Context) bool {
			a, err := getAutoscaler(ctx, ns, name)
			if err != nil || a.Status.LastDecision == nil {
				return false
			}
			for _, s := range a.Status.LastDecision.Steps {
				if s.Stage == stage && strings.Contains(s.Message, text) {
					t.Logf("%s/%s: decision step %s %d→%d: %s", ns, name, s.Stage, s.From, s.To, s.Message)
					return true
				}
			}
			return false
		})
}

// waitAutoscalerEvent polls until an event with reason is recorded on the
// Autoscaler.
func waitAutoscalerEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	waitUntil(t, hpaPollInterval, conditionTimeout, fmt.Sprintf("%s/%s: no event %s", ns, name, reason),
		func() string { return autoscalerStatus(ns, name) }, func(ctx context.Context) bool {
			return hasEvent(ctx, t, ns, name, func(e corev1.Event) bool { return e.InvolvedObject.Kind == "Autoscaler" && e.Reason == reason })
		})
}

// hasEvent reports whether the namespace holds an event about the object
// name that ok accepts, and logs it.
func hasEvent(ctx context.Context, t testing.TB, ns, name string, ok func(corev1.Event) bool) bool {
	evs, err := env().Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == name && ok(e) {
			t.Logf("%s/%s: event %s %s: %s", ns, name, e.Type, e.Reason, e.Message)
			return true
		}
	}
	return false
}

// autoscalerStatus renders the Autoscaler's status, last decision (metrics
// and steps), the namespace's events and the tail of ebbflow-autoscaler's
// log, for failure messages.
func autoscalerStatus(ns, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	a, err := getAutoscaler(ctx, ns, name)
	if err != nil {
		return fmt.Sprintf("autoscaler %s/%s: %v", ns, name, err)
	}
	fmt.Fprintf(&b, "autoscaler %s/%s: current %d desired %d\n", ns, name, a.Status.CurrentReplicas, a.Status.DesiredReplicas)
	for _, c := range a.Status.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if d := a.Status.LastDecision; d != nil {
		fmt.Fprintf(&b, "  last decision %s: %+v\n", d.Time.Format(time.TimeOnly), d.Outcome)
		for _, m := range d.Metrics {
			fmt.Fprintf(&b, "    metric %s: %s\n", m.Name, m.Reason)
		}
		for _, s := range d.Steps {
			fmt.Fprintf(&b, "    step %s %d→%d: %s\n", s.Stage, s.From, s.To, s.Message)
		}
	}
	if evs, err := env().Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "  event %s %s %s/%s %s: %s\n", e.LastTimestamp.Format(time.TimeOnly), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	fmt.Fprintf(&b, "autoscaler log:\n%s", env().LogTail(cluster.Autoscaler, 20))
	return b.String()
}

// hasConditionReason reports whether the Autoscaler has condition typ with
// status and a reason starting with reason.
func hasConditionReason(a *v1alpha1.Autoscaler, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason string) bool {
	for _, c := range a.Status.Conditions {
		if c.Type == typ && c.Status == status && strings.HasPrefix(c.Reason, reason) {
			return true
		}
	}
	return false
}

// pollUntil calls cond every poll interval until it holds and returns when;
// an error after timeout. Safe off the test goroutine.
func pollUntil(timeout time.Duration, cond func(context.Context) bool) (time.Time, error) {
	var at time.Time
	err := wait.PollUntilContextTimeout(context.Background(), hpaPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if !cond(ctx) {
			return false, nil
		}
		at = time.Now()
		return true, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("not within %v", timeout)
	}
	return at, nil
}

// waitUntil calls cond every interval until it holds and fails the test
// with what and state() (the object's state, read once) if it has not
// within timeout: the wait of the tests that need their own failure message
// (poll.Until's otherwise).
func waitUntil(t testing.TB, interval, timeout time.Duration, what string, state func() string, cond func(context.Context) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	})
	if err != nil {
		t.Fatalf("%s within %v\n%s", what, timeout, state())
	}
}

// replicasHeld reads the Deployment's spec.replicas every interval for d and
// returns an error at the first read that fails or is not want. Safe off the
// test goroutine.
func replicasHeld(ns, name string, want int32, d, every time.Duration) error {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(every) {
		r, err := deploymentReplicas(context.Background(), ns, name)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", ns, name, err)
		}
		if r != want {
			return fmt.Errorf("%s/%s: replicas %d, want %d held for %v", ns, name, r, want, d)
		}
	}
	return nil
}
