package kit

import (
	"fmt"
	"strings"
	"time"

	"github.com/ebbflow/ebbflow/test/resourcerules"
)

// ChartValues are the values a user on this cluster would set: where
// Prometheus is, fast relists and syncs, the rules of the sample app
// (requests per second; externalRules, a YAML list indented for the
// `external:` key, e.g. " []" or QueueRule) and resource metrics from the
// kubelet's /metrics/resource (ResourceRules over ResourceWindow).
// Everything else is the chart's default.
func (e *Env) ChartValues(externalRules string) string {
	return e.ChartValuesWith(ChartOptions{Rules: SampleAppRules(externalRules)})
}

// ChartOptions are the chart values that differ between the installs of
// the tests; the zero value is ChartValues' without the sample app's rules.
type ChartOptions struct {
	// Rules are rules.custom and rules.external (YAML indented for the
	// `rules:` key, as SampleAppRules writes them); none when empty.
	Rules string
	// Autoscaler is the chart's autoscaler section (YAML following the
	// `autoscaler:` key, e.g. " {enabled: false}"); empty: the chart's
	// defaults with kube-controller-manager's HPA sync period at 5 s.
	Autoscaler string
	// NoAPIService leaves the adapter's APIServices out
	// (adapter.apiService.create: false), where other servers register
	// those groups.
	NoAPIService bool
	// ResourceWindow is the window of the resource rules' CPU rate;
	// ResourceWindow when zero.
	ResourceWindow time.Duration
}

// ChartValuesWith are the values of the chart on this cluster: where
// Prometheus is, fast relists, metrics.k8s.io from the kubelet's
// /metrics/resource (ResourceRules) and what o sets.
func (e *Env) ChartValuesWith(o ChartOptions) string {
	return ChartValuesAt(e.C.PodPrometheusHost(), e.C.PodPrometheusPort(), o)
}

// ChartValuesAt are ChartValuesWith's values with Prometheus at
// promHost:promPort.
func ChartValuesAt(promHost string, promPort int, o ChartOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "prometheus:\n  url: http://%s\n  port: %d\nadapter:\n  metricsRelistInterval: 10s\n", promHost, promPort)
	if o.NoAPIService {
		b.WriteString("  apiService: {create: false}\n")
	}
	b.WriteString("  resourceMetrics: {enabled: true}\nautoscaler:")
	if o.Autoscaler == "" {
		o.Autoscaler = "\n  extraArguments: [--horizontal-pod-autoscaler-sync-period=5s]\n"
	}
	b.WriteString(o.Autoscaler)
	b.WriteString("rules:\n  default: false\n")
	b.WriteString(o.Rules)
	if o.ResourceWindow == 0 {
		o.ResourceWindow = ResourceWindow
	}
	b.WriteString(ResourceRules(o.ResourceWindow))
	return b.String()
}

// SampleAppRules are the sample app's custom rule (requests per second)
// and the external rules externalRules (a YAML list indented for the
// `external:` key, e.g. " []" or QueueRule), for ChartOptions.Rules.
func SampleAppRules(externalRules string) string {
	return `  custom:
  - seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
    name: {matches: "^(.*)_total$", as: "${1}_per_second"}
    metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[20s])) by (<<.GroupBy>>)'
  external:` + externalRules + "\n"
}

// ResourceWindow is the window of the CPU rate in ChartValues' resource
// rules, and the window metrics.k8s.io reports. Not longer: for 5 min after
// a pod starts, kube-controller-manager's HPA ignores its CPU until a whole
// window has passed since it became Ready, so a longer window delays the
// first scale-up of a fresh Deployment (two real-node runs with 45 s saw
// web-cpu's HPA not scale within the Workload test's 95 s). The price: the
// kubelet stamps an idle container's CPU counter up to 15 s apart, so a
// window can hold a single sample and that pod then has no CPU metric;
// hack/k8se2e, whose scale-down tests count such a pod at 100 %, asks for
// 45 s.
const ResourceWindow = 30 * time.Second

// ResourceRules is the chart's rules.resource (indented for the `rules:`
// key) over the kubelet's /metrics/resource as Prometheus scrapes it: CPU
// as the rate of the kubelet's counters over window, memory as the working
// set.
func ResourceRules(window time.Duration) string {
	return "  resource:\n" + resourcerules.Rules(window, 4, `container!="",metrics_path="/metrics/resource"`, `metrics_path="/metrics/resource"`)
}

// WithoutResourceMetrics turns metrics.k8s.io off in values written by
// ChartValues (adapter.resourceMetrics.enabled: false; the resource rules
// stay, unused), as a user installs before taking metrics-server's place.
func WithoutResourceMetrics(values string) string {
	const on = "resourceMetrics: {enabled: true}"
	if strings.Count(values, on) != 1 {
		panic("kit.WithoutResourceMetrics: values not of ChartValues")
	}
	return strings.Replace(values, on, "resourceMetrics: {enabled: false}", 1)
}

// QueueRule is the external rule of the sample app's queue
// (queue_messages_ready, summed by namespace), for ChartValues.
const QueueRule = `
  - seriesQuery: 'queue_messages_ready{namespace!=""}'
    resources: {namespaced: false}
    metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (namespace)'
`

// SampleApp is a Deployment of the sample app (restricted Pod Security:
// non-root, no capabilities, read-only root, RuntimeDefault seccomp) in
// namespace ns with one replica and a Service on port 80; Prometheus scrapes
// its pods by annotation. args are the program's flags, e.g.
// "--mode=serve", "--cpu-per-request=2ms".
func SampleApp(ns, name string, args ...string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata:
      labels: {app: %[1]s}
      annotations: {prometheus.io/scrape: "true", prometheus.io/port: "8080"}
    spec:
      terminationGracePeriodSeconds: 5
      securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: %[3]s
        imagePullPolicy: Never
        args: [%[4]s]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /readyz, port: http}, periodSeconds: 1}
        resources: {requests: {cpu: 20m, memory: 16Mi}, limits: {memory: 64Mi}}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  selector: {app: %[1]s}
  ports: [{name: http, port: 80, targetPort: http}]
`, name, ns, SampleAppImage, strings.Join(append(args, "--shutdown-delay=1s"), ", "))
}

// ScalingSpec is the spec (indented for `spec:`) shared by an HPA and an
// Autoscaler scaling the Deployment target on the sample app's
// http_requests_per_second: perPod requests per second per pod, 1..max
// replicas, a scale-down stabilization window of downWindow seconds.
func ScalingSpec(target string, perPod, maxReplicas, downWindow int) string {
	return fmt.Sprintf(`  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %s}
  minReplicas: 1
  maxReplicas: %d
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests_per_second}
      target: {type: AverageValue, averageValue: "%d"}
  behavior:
    scaleDown: {stabilizationWindowSeconds: %d}
`, target, maxReplicas, perPod, downWindow)
}

// HPA is an autoscaling/v2 HorizontalPodAutoscaler named name in ns with
// spec (indented for `spec:`).
func HPA(ns, name, spec string) string {
	return fmt.Sprintf("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: %s, namespace: %s}\nspec:\n%s", name, ns, spec)
}

// Autoscaler is an ebbflow Autoscaler named name in ns with spec (indented
// for `spec:`).
func Autoscaler(ns, name, spec string) string {
	return fmt.Sprintf("apiVersion: autoscaling.ebbflow.dev/v1alpha1\nkind: Autoscaler\nmetadata: {name: %s, namespace: %s}\nspec:\n%s", name, ns, spec)
}
