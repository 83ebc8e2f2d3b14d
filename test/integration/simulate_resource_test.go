package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/test/promtest"
)

const resourceSimRules = `
resourceRules:
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!=""}[1m]))'
    nodeQuery: 'sum by (<<.GroupBy>>) (rate(node_cpu_seconds_total{<<.LabelMatchers>>}[1m]))'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  memory:
    containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>,container!=""})'
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_MemTotal_bytes{<<.LabelMatchers>>})'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  window: 1m
`

// The Deployment's pods request 150m (app) + 50m (proxy) cpu: Utilization 50%
// is 100m a pod, and 75m of app's for the ContainerResource target.
const resourceSimSpecs = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: ns1}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - {name: app, image: api, resources: {requests: {cpu: 150m, memory: 128Mi}}}
      - {name: proxy, image: proxy, resources: {requests: {cpu: 50m, memory: 64Mi}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: api-cpu, namespace: ns1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: api-memory, namespace: ns1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 100Mi}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: api-app, namespace: ns1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - type: ContainerResource
    containerResource: {name: cpu, container: app, target: {type: Utilization, averageUtilization: 50}}
`

// cpuCounter is a cpu-seconds counter growing by before cores until minute
// 30, then by after cores.
func cpuCounter(before, after float64) func(float64) (float64, bool) {
	return func(m float64) (float64, bool) {
		if m < 30 {
			return before * 60 * m, true
		}
		return before*60*30 + after*60*(m-30), true
	}
}

const mi = 1 << 20

var resourceHistory = []recordedSeries{
	// api's two pods: app uses 150m then 550m, proxy 50m; 0.4 then 1.2 cores in all.
	{"container_cpu_usage_seconds_total", `{namespace="ns1",pod="api-6b6b6-aaaaa",container="app"}`, cpuCounter(0.15, 0.55)},
	{"container_cpu_usage_seconds_total", `{namespace="ns1",pod="api-6b6b6-aaaaa",container="proxy"}`, cpuCounter(0.05, 0.05)},
	{"container_cpu_usage_seconds_total", `{namespace="ns1",pod="api-6b6b6-bbbbb",container="app"}`, cpuCounter(0.15, 0.55)},
	{"container_cpu_usage_seconds_total", `{namespace="ns1",pod="api-6b6b6-bbbbb",container="proxy"}`, cpuCounter(0.05, 0.05)},
	// Not api's pods: another Deployment, another namespace.
	{"container_cpu_usage_seconds_total", `{namespace="ns1",pod="apix-1a1a1-zzzzz",container="app"}`, cpuCounter(5, 5)},
	{"container_cpu_usage_seconds_total", `{namespace="ns2",pod="api-6b6b6-ccccc",container="app"}`, cpuCounter(5, 5)},
	// 100Mi + 50Mi a pod: 300Mi in all.
	{"container_memory_working_set_bytes", `{namespace="ns1",pod="api-6b6b6-aaaaa",container="app"}`, constantValue(100 * mi)},
	{"container_memory_working_set_bytes", `{namespace="ns1",pod="api-6b6b6-aaaaa",container="proxy"}`, constantValue(50 * mi)},
	{"container_memory_working_set_bytes", `{namespace="ns1",pod="api-6b6b6-bbbbb",container="app"}`, constantValue(100 * mi)},
	{"container_memory_working_set_bytes", `{namespace="ns1",pod="api-6b6b6-bbbbb",container="proxy"}`, constantValue(50 * mi)},
	{"container_memory_working_set_bytes", `{namespace="ns2",pod="api-6b6b6-ccccc",container="app"}`, constantValue(9000 * mi)},
}

// TestSimulateResource backfills container cpu counters and memory gauges
// into a real Prometheus and replays cpu Utilization (requests from the
// Deployment in -f), memory AverageValue and a ContainerResource target to
// the replica sequences the conserved load gives.
func TestSimulateResource(t *testing.T) {
	start := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
	dir := t.TempDir()
	writeSeries(t, start, filepath.Join(dir, "data"), resourceHistory)
	prom := promtest.Start(t, promtest.Options{Dir: dir})
	rules := writeFile(t, "rules.yaml", []byte(resourceSimRules))
	specs := writeFile(t, "specs.yaml", []byte(resourceSimSpecs))
	from, to := start.Add(time.Minute), start.Add(59*time.Minute)
	base := []string{"-f", specs, "--rules", rules, "--prometheus-url", prom.URL(),
		"--start", from.UTC().Format(time.RFC3339), "--end", to.UTC().Format(time.RFC3339)}

	stdout, stderr, err := runSimulate(append(base, "-o", "json")...)
	mustf(t, err == nil, "simulate: %v\n%s", err, stderr)
	var got simulateJSON
	mustf(t, json.Unmarshal([]byte(stdout), &got) == nil && len(got.Specs) == 3, "output:\n%s", stdout)
	at := func(m int) int { return (m - 1) * 4 }
	for _, c := range []struct {
		spec     int
		minute   int
		perPod   float64 // the value read: the load over the ready pods
		replicas int32
	}{
		{0, 25, 0.1, 4},       // 400m over 4 pods at 100m a pod
		{0, 58, 0.1, 12},      // 1200m over 12 pods
		{1, 25, 100 * mi, 3},  // 300Mi at 100Mi a pod
		{1, 58, 100 * mi, 3},  //
		{2, 25, 0.075, 4},     // app's 300m at 75m a pod
		{2, 58, 1.1 / 15, 15}, // app's 1100m: ceil(1100/75) = 15
	} {
		s := got.Specs[c.spec]
		st := s.Steps[at(c.minute)]
		mustf(t, st.Replicas == c.replicas && st.Values[0] != nil && approx(*st.Values[0], c.perPod),
			"%s at minute %d: %d replicas, per-pod %v; want %d and %v", s.Name, c.minute, st.Replicas, deref(st.Values[0]), c.replicas, c.perPod)
	}
	// The replica sequences: from 1 to the default limit 4 (3 for memory), then
	// after minute 30, while rate[1m] climbs to the new load and new pods
	// start (their cpu distrusted for one window), up to the final count.
	for i, want := range []string{"[4 6 8 9 12]", "[3]", "[4 6 10 15]"} {
		s := got.Specs[i]
		var seq []int32
		for _, st := range s.Steps {
			if len(seq) == 0 || st.Replicas != seq[len(seq)-1] {
				seq = append(seq, st.Replicas)
			}
		}
		mustf(t, fmt.Sprint(seq) == want && s.Summary.FailedSteps == 0, "%s: replicas %v with %d failed steps, want %s and none", s.Name, seq, s.Summary.FailedSteps, want)
	}

	// Without the Deployment the Utilization targets have no requests.
	docs := strings.Split(resourceSimSpecs, "---\n")
	hpaOnly := writeFile(t, "hpa.yaml", []byte(docs[1]))
	_, _, err = runSimulate(append([]string{"-f", hpaOnly}, base[2:]...)...)
	mustf(t, err != nil && strings.Contains(err.Error(), "HorizontalPodAutoscaler/api-cpu: spec.metrics[0]: resource metric cpu: a Utilization target needs the pods' requests"),
		"without requests: %v", err)
	// --pod-requests stands in for the Deployment (one container holding the
	// requests: ContainerResource targets need the manifest).
	stdout, stderr, err = runSimulate(append([]string{"-f", hpaOnly, "--pod-requests", "cpu=400m,memory=1Gi", "-o", "json"}, base[2:]...)...)
	mustf(t, err == nil, "--pod-requests: %v\n%s", err, stderr)
	mustf(t, json.Unmarshal([]byte(stdout), &got) == nil, "output:\n%s", stdout)
	// 1.2 cores at 50% of 400m (200m a pod): 6 pods.
	mustf(t, got.Specs[0].Steps[at(58)].Replicas == 6, "cpu with 400m requested: %d replicas at the end, want 6", got.Specs[0].Steps[at(58)].Replicas)
}

func approx(got, want float64) bool {
	d := got - want
	return d < want*0.01+0.0011 && d > -(want*0.01+0.0011)
}
