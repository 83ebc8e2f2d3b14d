package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
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
var replayScenarios = []string{"ramp", "pods", "missing-metric"}

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
