package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/test/cluster"
)

// holdAfterFailure is how long replicas are watched after the HPA has
// reported the failure: three HPA sync periods.
const holdAfterFailure = 15 * time.Second

// restartTimeout bounds bringing the adapter or Prometheus back.
const restartTimeout = 2 * time.Minute

// TestFaults takes parts of the metrics pipeline away while one HPA scales a
// worker Deployment on the external queue_messages_ready (AverageValue 30).
// Each phase first scales to 3 workers (90 messages), then breaks something
// and drops the queue to 0, which a working pipeline would answer with a
// scale-down: an HPA that cannot read its metric must hold its replicas
// instead, say so in its conditions, and scale down once the fault is gone.
func TestFaults(t *testing.T) {
	ns := newNamespace(t, "e2e-faults-")
	queue := setQueue(t, ns, 0)
	createDeployment(t, ns, "worker")
	createHPA(t, ns, "worker", 6, externalMetric(queue, averageValue("30")))
	waitCondition(t, ns, "worker", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")

	t.Run("AdapterRestart", func(t *testing.T) {
		queue.set(90)
		waitReplicas(t, ns, "worker", scaleUpTimeout, "3", func(r int32) bool { return r == 3 })
		waitCondition(t, ns, "worker", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
		env().StopAdapter()
		t.Cleanup(func() { ensureAdapter(t) }) // a no-op when already running
		queue.set(0)
		holdDuringOutage(t, ns, "worker", 3, "FailedGetExternalMetric")
		ensureAdapter(t)
		waitReplicas(t, ns, "worker", scaleDownTimeout, "back to 1", func(r int32) bool { return r == 1 })
		waitCondition(t, ns, "worker", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
	})

	t.Run("PrometheusStopped", func(t *testing.T) {
		queue.set(90)
		waitReplicas(t, ns, "worker", scaleUpTimeout, "3", func(r int32) bool { return r == 3 })
		waitCondition(t, ns, "worker", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
		prom := env().Prometheus()
		prom.Stop()
		t.Cleanup(func() {
			if !prom.Running() {
				ensurePrometheus(t)
			}
		})
		queue.set(0)
		holdDuringOutage(t, ns, "worker", 3, "FailedGetExternalMetric")
		ensurePrometheus(t)
		// The outage outlasted the max age, so the first relists after it list
		// no series until Prometheus scrapes again; the adapter keeps serving
		// the metrics it had (a metric gone from discovery is a 404 to HPAs).
		stayDiscovered(t, env().AdapterRelistInterval()+5*time.Second)
		waitReplicas(t, ns, "worker", scaleDownTimeout, "back to 1", func(r int32) bool { return r == 1 })
		waitCondition(t, ns, "worker", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
	})

	t.Run("InvalidRules", func(t *testing.T) {
		queue.set(0)
		waitReplicas(t, ns, "worker", scaleDownTimeout, "1", func(r int32) bool { return r == 1 })
		// An unknown key and an unterminated template: rejected by the loader.
		invalid := []byte("rules:\n- seriesQuery: 'http_requests_total{namespace!=\"\"}'\n" +
			"  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>'\n  notAField: true\n")
		if err := env().WriteRules(invalid); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := env().WriteRules([]byte(rulesYAML)); err != nil {
				t.Errorf("restore rules: %v", err)
			}
		})
		waitRejected(t, invalid)
		// The old rules keep serving: the HPA still reads its metric and
		// scales on a change that happens after the rejection.
		queue.set(90)
		waitReplicas(t, ns, "worker", scaleUpTimeout, "3", func(r int32) bool { return r == 3 })
		waitCondition(t, ns, "worker", autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
		// Every metric of the old rules is still discovered, including those
		// the invalid file does not mention.
		if err := missingMetrics(); err != nil {
			t.Errorf("after the rejected rules: %v", err)
		}
	})
}

// missingMetrics lists the rules' metrics that discovery does not list.
func missingMetrics() error {
	var errs []error
	for gv, want := range map[string][]string{
		"custom.metrics.k8s.io/v1beta2":   customResources(),
		"external.metrics.k8s.io/v1beta1": {QueueGauge},
	} {
		got, err := discovered(gv)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", gv, err))
			continue
		}
		for _, name := range want {
			if !slices.Contains(got, name) {
				errs = append(errs, fmt.Errorf("%s: %s missing (have %v)", gv, name, got))
			}
		}
	}
	return errors.Join(errs...)
}

// stayDiscovered checks every second for d that every metric of the rules stays
// discovered.
func stayDiscovered(t *testing.T, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second) {
		if err := missingMetrics(); err != nil {
			t.Fatalf("metrics dropped from discovery after the outage: %v\n%s", err, env().LogTail(cluster.Adapter, 20))
		}
	}
}

// holdDuringOutage checks, every second, that the Deployment keeps want
// replicas until the HPA reports ScalingActive=False with reason and for
// holdAfterFailure after that.
func holdDuringOutage(t *testing.T, ns, name string, want int32, reason string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), conditionTimeout+holdAfterFailure)
	defer cancel()
	start := time.Now()
	var failedAt time.Time
	for {
		r, err := deploymentReplicas(ctx, ns, name)
		if err == nil && r != want {
			t.Fatalf("%s/%s: replicas changed to %d during the outage, want %d held\n%s", ns, name, r, want, describeHPA(ns, name))
		}
		if failedAt.IsZero() {
			if c, ok := hpaCondition(ctx, ns, name, autoscalingv2.ScalingActive); ok && c.Status == corev1.ConditionFalse && c.Reason == reason {
				failedAt = time.Now()
				t.Logf("%s/%s: ScalingActive=False (%s) after %v: %s", ns, name, c.Reason, time.Since(start).Round(time.Second), c.Message)
			}
		} else if time.Since(failedAt) >= holdAfterFailure {
			t.Logf("%s/%s: held %d replicas for %v of failed metrics", ns, name, want, holdAfterFailure)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s/%s: no ScalingActive=False (%s) within %v\n%s", ns, name, reason, conditionTimeout, describeHPA(ns, name))
		case <-time.After(hpaPollInterval):
		}
	}
}

// ensureAdapter starts the adapter if it is stopped and waits for its
// APIServices. StartAdapter is retried (it leaves a running adapter alone):
// registering the APIServices can race with kube-apiserver's own status
// updates and fail with a conflict.
func ensureAdapter(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		if err = env().StartAdapter(ctx); err == nil {
			return
		}
		t.Logf("start adapter, attempt %d: %v", attempt, err)
	}
	t.Fatalf("start adapter: %v\n%s", err, env().LogTail(cluster.Adapter, 30))
}

// ensurePrometheus starts the stopped Prometheus again on its port and data.
func ensurePrometheus(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	if err := env().Prometheus().Restart(ctx); err != nil {
		t.Fatalf("restart prometheus: %v\n%s", err, env().LogTail(cluster.Prometheus, 30))
	}
}

// waitRejected waits until the adapter logs that it rejected the rule file
// with the content given (identified by its SHA-256).
func waitRejected(t *testing.T, content []byte) {
	t.Helper()
	sum := sha256.Sum256(content)
	hash := hex.EncodeToString(sum[:])
	ctx, cancel := context.WithTimeout(context.Background(), conditionTimeout)
	defer cancel()
	for {
		// A multi-line error puts the record's key/values (the hash) lines below
		// its message: look at each rejection record up to the next record.
		tail := env().LogTail(cluster.Adapter, 2000)
		for rest := tail; ; {
			i := strings.Index(rest, "Rule file rejected")
			if i < 0 {
				break
			}
			record := rest[i:]
			if end := strings.Index(record, "\nI1"); end >= 0 {
				record = record[:end]
			}
			if end := strings.Index(record, "\nE1"); end >= 0 {
				record = record[:end]
			}
			if strings.Contains(record, hash) {
				t.Logf("adapter: %s", record)
				return
			}
			rest = rest[i+1:]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the adapter did not reject the invalid rules within %v\n%s", conditionTimeout, env().LogTail(cluster.Adapter, 30))
		case <-time.After(hpaPollInterval):
		}
	}
}
