package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/cli"
)

// Replay equals reality: after a differential scenario ran, `ebbflow
// simulate` replays the scenario's time range from the cluster's Prometheus
// with the same spec and sync period, and must reproduce the sequence
// kube-controller-manager produced, with the differential verdict (same
// values, each change within diffSkew). External metrics replay as
// recorded; the Pods scenario publishes the same per-pod value for every
// pod, which the load model's conservation law reproduces as long as the
// simulated pods follow the real ones.

// replayScenarios are the differential scenarios replayed after their run.
// Not "pods": it publishes a fixed value per pod whatever the count, so its
// load grows with the real replicas — the opposite of a conserved load, and
// a replay whose phase differs from reality's reads another load.
var replayScenarios = []string{"ramp", "pods-load", "missing-metric"}

// podsLoadScenario is a Pods metric under a conserved load, as the
// simulator models it (and as the demo's traffic behaves): the load is
// divided among each Deployment's ready pods. Pods AverageValue 10: load 5
// is 1 pod; 75 is 8 (7.5 per pod); 30 is 3 (3.75 at 8); 6 is 1.
func podsLoadScenario() diffScenario {
	s := time.Second
	return diffScenario{
		name: "pods-load",
		spec: func(ns string) autoscalingv2.HorizontalPodAutoscalerSpec {
			return hpaSpec(1, 10, nil, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: InflightGauge}, Target: avgTarget(10)}})
		},
		steps: []diffStep{{10 * s, vals(keyLoad, 5)}, {30 * s, vals(keyLoad, 75)}, {25 * s, vals(keyLoad, 30)}, {25 * s, vals(keyLoad, 6)}},
	}
}

// perPodValues returns the value of each pod's e2e_inflight series at st:
// keyPods on every live pod; keyLoad divided among the ready pods of each
// Deployment (app label), pods not ready having no series. ok is false when
// the pods could not be listed.
func (p *diffPublisher) perPodValues(ctx context.Context, st diffStep) (map[string]float64, bool) {
	v, perPod := st.values[keyPods]
	load, conserved := st.values[keyLoad]
	out := map[string]float64{}
	if !perPod && !conserved {
		return out, true
	}
	pods, err := p.env.c.Client().CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: "diff=true"})
	if err != nil {
		return nil, false
	}
	ready := map[string]int{}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil && podIsReady(&pod) {
			ready[pod.Labels["app"]]++
		}
	}
	for _, pod := range pods.Items {
		switch {
		case pod.DeletionTimestamp != nil:
		case perPod:
			out[pod.Name] = v
		case podIsReady(&pod):
			out[pod.Name] = load / float64(ready[pod.Labels["app"]])
		}
	}
	return out, true
}

func podIsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// replayPodStartup is the simulated pods' startup: kwok makes pods Ready
// within a second, and the publisher and a scrape add about as much before
// a new pod has a sample.
const replayPodStartup = 2 * time.Second

// replayScenario runs `ebbflow simulate` over run's trajectory for the
// Deployment side and returns the simulated sequence, in the differential
// test's form (initial replicas, then each change relative to run.start).
func replayScenario(t *testing.T, sc diffScenario, run diffRun, side string) (replicaSeq, error) {
	dir := t.TempDir()
	spec := sc.spec(run.ns)
	spec.ScaleTargetRef.Name = side
	hpa := autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: side, Namespace: run.ns},
		Spec:       spec,
	}
	manifest, err := yaml.Marshal(hpa)
	if err != nil {
		return nil, err
	}
	specFile := filepath.Join(dir, "hpa.yaml")
	if err := os.WriteFile(specFile, manifest, 0o600); err != nil {
		return nil, err
	}
	// The rules the cluster's adapter serves (test/cluster keeps them there).
	rules := filepath.Join(env().Dir(), "adapter", "rules.yaml")
	end := run.start.Add(sc.duration())
	cmd := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"simulate", "-f", specFile, "--rules", rules, "--prometheus-url", env().Prometheus().URL(),
		"--start", run.start.UTC().Format(time.RFC3339Nano), "--end", end.UTC().Format(time.RFC3339Nano),
		"--step", diffSyncPeriod.String(), "--pod-startup", replayPodStartup.String(), "--initial-replicas", "1", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, errOut.String())
	}
	var doc struct {
		Specs []struct {
			Steps []struct {
				Time     time.Time `json:"time"`
				Replicas int32     `json:"replicas"`
			} `json:"steps"`
		} `json:"specs"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Specs) != 1 {
		return nil, fmt.Errorf("simulate output (%v):\n%s", err, out.String())
	}
	seq := replicaSeq{{replicas: 1}}
	for _, st := range doc.Specs[0].Steps {
		if st.Replicas != seq[len(seq)-1].replicas {
			seq = append(seq, replicaChange{replicas: st.Replicas, at: st.Time.Sub(run.start)})
		}
	}
	return seq, nil
}
