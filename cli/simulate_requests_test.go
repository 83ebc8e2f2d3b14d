package cli

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

const resourceHPA = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 50}
`

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: web
        resources: {requests: {cpu: 150m, memory: 128Mi}}
      - name: proxy
        image: proxy
        resources: {requests: {cpu: 50m}}
`

// cpuRequest is the cpu request of one pod of template, as the controller
// computes it.
func cpuRequest(t *testing.T, template *replicas.Pod) int64 {
	t.Helper()
	if template == nil {
		t.Fatal("no pod template")
	}
	p := *template
	p.Name = "p"
	r, err := replicas.Requests([]replicas.Pod{p}, corev1.ResourceCPU, "")
	if err != nil {
		t.Fatal(err)
	}
	return r["p"]
}

// The pods' requests come from the scale target's manifest in -f (the sum
// of its containers') or from --pod-requests, which wins.
func TestPodTemplate(t *testing.T) {
	file := writeTemp(t, "web.yaml", webDeployment+"---\n"+resourceHPA+"---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: other}\nspec: {template: {spec: {containers: [{name: x, resources: {requests: {cpu: 9}}}]}}}\n")
	specs, err := loadSpecs([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	workloads, err := loadWorkloads([]string{file})
	if err != nil || len(workloads) != 2 {
		t.Fatalf("workloads %v %v, want web and other", workloads, err)
	}
	if got := cpuRequest(t, podTemplate(nil, workloads, specs[0], "shop")); got != 200 {
		t.Errorf("request from the Deployment %dm, want 150m+50m", got)
	}
	if podTemplate(nil, workloads, specs[0], "elsewhere") != nil {
		t.Error("a Deployment of another namespace was used")
	}
	flag, err := parsePodRequests("cpu=250m, memory=256Mi")
	if err != nil {
		t.Fatal(err)
	}
	if got := cpuRequest(t, podTemplate(flag, workloads, specs[0], "shop")); got != 250 {
		t.Errorf("request from --pod-requests %dm, want 250m", got)
	}
	for _, bad := range []string{"cpu", "cpu=lots", "cpu=1,cpu=2", "=1"} {
		if _, err := parsePodRequests(bad); err == nil || !strings.Contains(err.Error(), "--pod-requests") {
			t.Errorf("%q: %v, want an error naming --pod-requests", bad, err)
		}
	}
}

// A Utilization target without known requests fails before Prometheus is
// asked, naming the spec and the metric.
func TestSimulateUtilizationWithoutRequests(t *testing.T) {
	spec := writeTemp(t, "hpa.yaml", resourceHPA)
	rules := writeTemp(t, "rules.yaml", "externalRules:\n- seriesQuery: 'q{a!=\"\"}'\n  resources: {namespaced: false}\n  metricsQuery: 'sum(<<.Series>>)'\n")
	_, err := run(t, "simulate", "-f", spec, "--rules", rules, "--prometheus-url", "http://127.0.0.1:1", "--since", "1h")
	want := "HorizontalPodAutoscaler/web: spec.metrics[0]: resource metric cpu: a Utilization target needs the pods' requests"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
	_, err = run(t, "simulate", "-f", spec, "--rules", rules, "--prometheus-url", "http://127.0.0.1:1", "--since", "1h", "--pod-requests", "memory=1Gi")
	if err == nil || !strings.Contains(err.Error(), "spec.metrics[0]: resource metric cpu: missing request for cpu") {
		t.Errorf("--pod-requests without cpu: %v", err)
	}
	_, err = run(t, "simulate", "-f", spec, "--rules", rules, "--prometheus-url", "http://127.0.0.1:1", "--since", "1h", "--pod-requests", "cpu=100m")
	if err == nil || !strings.Contains(err.Error(), "prometheus:") {
		t.Errorf("with requests the replay goes on to Prometheus: %v", err)
	}
}
