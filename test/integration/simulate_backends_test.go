package integration

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/test/promtest"
)

const backendRules = `
externalRules:
- seriesQuery: 'jobs_pending{queue!=""}'
  backend: second
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

const backendSpec = `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: batch, namespace: ns1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: batch}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - type: External
    external:
      metric:
        name: jobs_pending
        selector: {matchLabels: {queue: batch}}
      target: {type: AverageValue, averageValue: "10"}
`

func jobs(m float64) (float64, bool) {
	if m < 30 {
		return 40, true
	}
	return 80, true
}

// TestSimulateBackends replays a metric whose rule names a second backend:
// two real Prometheus servers hold different values of the same series, and
// the replay must read the one of the backend the rule names.
func TestSimulateBackends(t *testing.T) {
	start := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
	defDir, secondDir := t.TempDir(), t.TempDir()
	// The default backend holds a decoy: read there, the replay would run at 20.
	writeSeries(t, start, filepath.Join(defDir, "data"), []recordedSeries{{"jobs_pending", `{queue="batch"}`, constantValue(5000)}})
	writeSeries(t, start, filepath.Join(secondDir, "data"), []recordedSeries{{"jobs_pending", `{queue="batch"}`, jobs}})
	def := promtest.Start(t, promtest.Options{Dir: defDir})
	second := promtest.Start(t, promtest.Options{Dir: secondDir})
	rules := writeFile(t, "rules.yaml", []byte(backendRules))
	spec := writeFile(t, "spec.yaml", []byte(backendSpec))
	backends := writeFile(t, "backends.yaml", []byte("backends:\n- name: second\n  url: "+second.URL()+"\n"))
	from, to := start.Add(time.Minute), start.Add(59*time.Minute)
	base := []string{"-f", spec, "--rules", rules, "--prometheus-url", def.URL(),
		"--start", from.UTC().Format(time.RFC3339), "--end", to.UTC().Format(time.RFC3339)}

	stdout, stderr, err := runSimulate(append(base, "--prometheus-backends-file", backends, "-o", "json")...)
	mustf(t, err == nil, "simulate: %v\n%s", err, stderr)
	var got simulateJSON
	mustf(t, json.Unmarshal([]byte(stdout), &got) == nil && len(got.Specs) == 1, "output:\n%s", stdout)
	steps := got.Specs[0].Steps
	at := func(m int) int { return (m - 1) * 4 }
	for _, c := range []struct {
		minute   int
		value    float64
		replicas int32
	}{{10, 40, 4}, {25, 40, 4}, {45, 80, 8}, {58, 80, 8}} {
		st := steps[at(c.minute)]
		mustf(t, st.Values[0] != nil && *st.Values[0] == c.value && st.Replicas == c.replicas,
			"minute %d: value %v, %d replicas; want %v from the second backend and %d replicas", c.minute, deref(st.Values[0]), st.Replicas, c.value, c.replicas)
	}

	_, _, err = runSimulate(base...)
	mustf(t, err != nil && strings.Contains(err.Error(), `externalRules[0] (seriesQuery "jobs_pending{queue!=\"\"}"): backend: unknown backend "second"`),
		"without the backends file: %v", err)
}
