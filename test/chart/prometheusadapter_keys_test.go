package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// prometheusAdapterKeys are the keys of prometheus-adapter's chart 5.x
// (5.0.0 to 5.3.0) values.yaml, leaves and the keys its comments offer
// (rules.resource, dnsPolicy, service.clusterIP). Each one is honoured
// (keyCase.check) or refused with a message (keyCase.refused).
var prometheusAdapterKeys = []string{
	"affinity", "automountServiceAccountToken",
	"certManager.caCertDuration", "certManager.caCertRevisionHistoryLimit", "certManager.certDuration",
	"certManager.certRevisionHistoryLimit", "certManager.enabled",
	"customAnnotations", "customLabels", "deploymentAnnotations", "dnsConfig", "dnsPolicy",
	"env", "extraArguments", "extraContainers", "extraManifests", "extraVolumeMounts", "extraVolumes",
	"fullnameOverride", "hostNetwork.enabled",
	"image.pullPolicy", "image.pullSecrets", "image.repository", "image.tag",
	"listenPort", "livenessProbe", "logLevel", "metricsRelistInterval", "nameOverride", "namespaceOverride",
	"nodeSelector", "podAnnotations",
	"podDisruptionBudget.enabled", "podDisruptionBudget.maxUnavailable", "podDisruptionBudget.minAvailable",
	"podDisruptionBudget.unhealthyPodEvictionPolicy",
	"podLabels", "podSecurityContext", "priorityClassName", "prometheus.path", "prometheus.port", "prometheus.url",
	"rbac.create", "rbac.customMetrics.resources", "rbac.externalMetrics.resources", "rbac.useAuthReaderClusterRole",
	"readinessProbe", "replicas", "resources", "revisionHistoryLimit",
	"rules.custom", "rules.default", "rules.existing", "rules.external", "rules.resource",
	"securityContext", "service.annotations", "service.clusterIP", "service.ipDualStack.enabled",
	"service.ipDualStack.ipFamilies", "service.ipDualStack.ipFamilyPolicy", "service.port", "service.type",
	"serviceAccount.annotations", "serviceAccount.automountServiceAccountToken", "serviceAccount.create",
	"serviceAccount.name", "startupProbe", "strategy",
	"tls.ca", "tls.certificate", "tls.enable", "tls.key", "tolerations", "topologySpreadConstraints",
}

// keyCase sets one prometheus-adapter key (and what it needs beside it) with
// --set-json and checks where it is rendered, or that it is refused.
type keyCase struct {
	set     []string // KEY=JSON
	check   func(t *testing.T, r *rendered) error
	refused string // part of the error helm prints
}

// renderedAlone are the keys whose case renders on its own: they rename or
// remove objects, or set what other cases compare whole. The other cases share
// one render with all their values, as in a values file that sets them all.
var renderedAlone = []string{
	"certManager.caCertDuration", "certManager.caCertRevisionHistoryLimit", "certManager.certDuration",
	"certManager.certRevisionHistoryLimit", "certManager.enabled", "customAnnotations", "customLabels",
	"fullnameOverride", "nameOverride", "namespaceOverride", "image.repository", "image.tag",
	"podDisruptionBudget.enabled", "podDisruptionBudget.maxUnavailable", "podDisruptionBudget.minAvailable",
	"podDisruptionBudget.unhealthyPodEvictionPolicy", "prometheus.path", "prometheus.port", "prometheus.url",
	"rbac.create", "rbac.customMetrics.resources", "rbac.externalMetrics.resources",
	"rules.default", "rules.existing", "service.ipDualStack.enabled", "service.ipDualStack.ipFamilies",
	"service.ipDualStack.ipFamilyPolicy", "serviceAccount.create", "serviceAccount.name",
	"tls.ca", "tls.certificate", "tls.enable", "tls.key",
}

// TestPrometheusAdapterKeys: every key of prometheus-adapter's chart, set at
// its prometheus-adapter name (top level), is either rendered where
// prometheus-adapter's chart renders it or refused by helm template with a
// message naming the key and what to write instead.
func TestPrometheusAdapterKeys(t *testing.T) {
	cases := prometheusAdapterKeyCases()
	for k := range cases {
		if !slices.Contains(prometheusAdapterKeys, k) {
			t.Errorf("case %s is not a key of prometheus-adapter's chart", k)
		}
	}
	var shared []string
	for _, k := range prometheusAdapterKeys {
		c, ok := cases[k]
		if !ok {
			t.Errorf("no case for prometheus-adapter's key %s", k)
			continue
		}
		if !slices.Contains(renderedAlone, k) {
			shared = append(shared, c.set...)
		}
	}
	together, err := renderJSON(t, nil, shared...)
	if err != nil {
		t.Fatalf("the shared values: %v", err)
	}
	for _, k := range prometheusAdapterKeys {
		c, ok := cases[k]
		if !ok {
			continue
		}
		t.Run(k, func(t *testing.T) {
			r := together
			if slices.Contains(renderedAlone, k) {
				var err error
				r, err = renderJSON(t, nil, c.set...)
				if c.refused != "" {
					if err == nil || !strings.Contains(err.Error(), c.refused) {
						t.Fatalf("%v: error %v, want one containing %q", c.set, err, c.refused)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := c.check(t, r); err != nil {
				t.Errorf("%v: %v", c.set, err)
			}
		})
	}
}

// podIs returns a check of a pod spec field against JSON want.
func podIs(field, want string) func(*testing.T, *rendered) error {
	return func(t *testing.T, r *rendered) error {
		return equal(t, "pod spec "+field, r.pod[field], fromJSON(t, want))
	}
}

// containerIs returns a check of the adapter container's field against JSON want.
func containerIs(field, want string) func(*testing.T, *rendered) error {
	return func(t *testing.T, r *rendered) error {
		return equal(t, "adapter container "+field, r.container[field], fromJSON(t, want))
	}
}

// objectIs returns a check of a field (dotted path) of the object KIND NAME.
func objectIs(kind, name, path, want string) func(*testing.T, *rendered) error {
	return func(t *testing.T, r *rendered) error {
		o := find(r.objs, kind, name)
		if o == nil {
			return fmt.Errorf("no %s %s; rendered %v", kind, name, kinds(r.objs))
		}
		return equal(t, kind+" "+name+" ."+path, at(o.Object, path), fromJSON(t, want))
	}
}

func argIs(arg string) func(*testing.T, *rendered) error {
	return func(t *testing.T, r *rendered) error { return r.hasArg(t, arg) }
}

func fromJSON(t *testing.T, s string) any {
	t.Helper()
	return jsonValue(t, rawJSON(s))
}

// rawJSON is JSON text that jsonValue parses (YAML is a superset of JSON).
type rawJSON string

func (j rawJSON) MarshalJSON() ([]byte, error) { return []byte(j), nil }

// certManagerOn sets cert-manager on beside a certManager.* key.
var certManagerOn = "certManager.enabled=true"

// tlsOn are the provided-certificate keys, beside one of them.
var tlsOn = []string{"tls.enable=true", `tls.ca="CA"`, `tls.certificate="CERT"`, `tls.key="KEY"`}

func prometheusAdapterKeyCases() map[string]keyCase {
	probe := `{"httpGet":{"path":"/healthz","port":"https","scheme":"HTTPS"},"initialDelaySeconds":7,"timeoutSeconds":3}`
	noObject := func(kind, name string) func(*testing.T, *rendered) error {
		return func(t *testing.T, r *rendered) error {
			if find(r.objs, kind, name) != nil {
				return fmt.Errorf("%s %s rendered", kind, name)
			}
			return nil
		}
	}
	return map[string]keyCase{
		"affinity":                     {set: []string{`affinity={"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"podAffinityTerm":{"topologyKey":"kubernetes.io/hostname"}}]}}`}, check: podIs("affinity", `{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"podAffinityTerm":{"topologyKey":"kubernetes.io/hostname"}}]}}`)},
		"automountServiceAccountToken": {set: []string{"automountServiceAccountToken=false"}, check: podIs("automountServiceAccountToken", "false")},
		"certManager.enabled":          {set: []string{certManagerOn}, check: objectIs("Certificate", "ebbflow-adapter-serving-cert", "spec.secretName", `"ebbflow-adapter-serving-cert"`)},
		"certManager.caCertDuration":   {set: []string{certManagerOn, `certManager.caCertDuration="1000h0m0s"`}, check: objectIs("Certificate", "ebbflow-adapter-ca", "spec.duration", `"1000h0m0s"`)},
		"certManager.certDuration":     {set: []string{certManagerOn, `certManager.certDuration="100h0m0s"`}, check: objectIs("Certificate", "ebbflow-adapter-serving-cert", "spec.duration", `"100h0m0s"`)},
		"certManager.caCertRevisionHistoryLimit": {set: []string{certManagerOn, "certManager.caCertRevisionHistoryLimit=2"},
			check: objectIs("Certificate", "ebbflow-adapter-ca", "spec.revisionHistoryLimit", "2")},
		"certManager.certRevisionHistoryLimit": {set: []string{certManagerOn, "certManager.certRevisionHistoryLimit=3"},
			check: objectIs("Certificate", "ebbflow-adapter-serving-cert", "spec.revisionHistoryLimit", "3")},
		"customAnnotations": {set: []string{`customAnnotations={"owner":"platform"}`}, check: func(t *testing.T, r *rendered) error {
			for _, o := range r.objs {
				if o.GetAnnotations()["owner"] != "platform" {
					return fmt.Errorf("%s lacks the annotation", key(o))
				}
			}
			return nil
		}},
		"customLabels": {set: []string{`customLabels={"team":"platform"}`}, check: func(t *testing.T, r *rendered) error {
			for _, o := range r.objs {
				if o.GetLabels()["team"] != "platform" {
					return fmt.Errorf("%s lacks the label", key(o))
				}
			}
			return nil
		}},
		"deploymentAnnotations": {set: []string{`deploymentAnnotations={"a.example/b":"c"}`}, check: objectIs("Deployment", "ebbflow-adapter", "metadata.annotations", `{"a.example/b":"c"}`)},
		"dnsConfig":             {set: []string{`dnsConfig={"options":[{"name":"ndots","value":"2"}]}`}, check: podIs("dnsConfig", `{"options":[{"name":"ndots","value":"2"}]}`)},
		"dnsPolicy":             {set: []string{`dnsPolicy="Default"`}, check: podIs("dnsPolicy", `"Default"`)},
		"env": {set: []string{`env=[{"name":"TMP_DIR","value":"/tmp"}]`}, check: func(t *testing.T, r *rendered) error {
			return contains(t, "env", r.container["env"], fromJSON(t, `{"name":"TMP_DIR","value":"/tmp"}`))
		}},
		"extraArguments": {set: []string{`extraArguments=["--metrics-max-age=3m"]`}, check: argIs("--metrics-max-age=3m")},
		"extraContainers": {set: []string{`extraContainers=[{"name":"proxy","image":"proxy:1"}]`}, check: func(t *testing.T, r *rendered) error {
			return contains(t, "containers", r.pod["containers"], fromJSON(t, `{"name":"proxy","image":"proxy:1"}`))
		}},
		"extraManifests": {set: []string{`extraManifests=[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"extra-{{ .Release.Name }}"}}]`},
			check: objectIs("ConfigMap", "extra-ebbflow", "kind", `"ConfigMap"`)},
		"extraVolumeMounts": {set: []string{`extraVolumeMounts=[{"name":"certs","mountPath":"/etc/ssl/certs","readOnly":true}]`}, check: func(t *testing.T, r *rendered) error {
			return contains(t, "volumeMounts", r.container["volumeMounts"], fromJSON(t, `{"name":"certs","mountPath":"/etc/ssl/certs","readOnly":true}`))
		}},
		"extraVolumes": {set: []string{`extraVolumes=[{"name":"certs","hostPath":{"path":"/etc/ssl/certs"}}]`}, check: func(t *testing.T, r *rendered) error {
			return contains(t, "volumes", r.pod["volumes"], fromJSON(t, `{"name":"certs","hostPath":{"path":"/etc/ssl/certs"}}`))
		}},
		"fullnameOverride":    {set: []string{`fullnameOverride="metrics"`}, check: objectIs("Deployment", "metrics-adapter", "kind", `"Deployment"`)},
		"nameOverride":        {set: []string{`nameOverride="metrics"`}, check: objectIs("Deployment", "ebbflow-metrics-adapter", "kind", `"Deployment"`)},
		"namespaceOverride":   {set: []string{`namespaceOverride="monitoring"`}, check: objectIs("Deployment", "ebbflow-adapter", "metadata.namespace", `"monitoring"`)},
		"hostNetwork.enabled": {set: []string{"hostNetwork.enabled=true"}, check: podIs("hostNetwork", "true")},
		"image.pullPolicy":    {set: []string{`image.pullPolicy="Always"`}, check: containerIs("imagePullPolicy", `"Always"`)},
		"image.pullSecrets":   {set: []string{`image.pullSecrets=["regcred"]`}, check: podIs("imagePullSecrets", `[{"name":"regcred"}]`)},
		"image.repository": {set: []string{`image.repository="registry.k8s.io/prometheus-adapter/prometheus-adapter"`},
			refused: "image.repository: prometheus-adapter's image key would run prometheus-adapter's image (registry.k8s.io/prometheus-adapter/prometheus-adapter); this chart runs ebbflow-adapter from adapter.image.repository"},
		"image.tag": {set: []string{`image.tag="v0.12.0"`}, refused: "image.tag: prometheus-adapter's image key would run prometheus-adapter's image (v0.12.0); this chart runs ebbflow-adapter from adapter.image.tag"},
		"listenPort": {set: []string{"listenPort=7443"}, check: func(t *testing.T, r *rendered) error {
			if err := r.hasArg(t, "--secure-port=7443"); err != nil {
				return err
			}
			return equal(t, "container ports", r.container["ports"], fromJSON(t, `[{"name":"https","containerPort":7443,"protocol":"TCP"}]`))
		}},
		"livenessProbe":                    {set: []string{"livenessProbe=" + probe}, check: containerIs("livenessProbe", probe)},
		"readinessProbe":                   {set: []string{"readinessProbe=" + probe}, check: containerIs("readinessProbe", probe)},
		"startupProbe":                     {set: []string{"startupProbe=" + probe}, check: containerIs("startupProbe", probe)},
		"logLevel":                         {set: []string{"logLevel=6"}, check: argIs("--v=6")},
		"metricsRelistInterval":            {set: []string{`metricsRelistInterval="30s"`}, check: argIs("--metrics-relist-interval=30s")},
		"nodeSelector":                     {set: []string{`nodeSelector={"pool":"system"}`}, check: podIs("nodeSelector", `{"pool":"system"}`)},
		"podAnnotations":                   {set: []string{`podAnnotations={"a":"b"}`}, check: objectIs("Deployment", "ebbflow-adapter", "spec.template.metadata.annotations", `{"a":"b"}`)},
		"podLabels":                        {set: []string{`podLabels={"a":"b"}`}, check: objectIs("Deployment", "ebbflow-adapter", "spec.template.metadata.labels.a", `"b"`)},
		"podDisruptionBudget.enabled":      {set: []string{"podDisruptionBudget.enabled=false"}, check: noObject("PodDisruptionBudget", "ebbflow-adapter")},
		"podDisruptionBudget.minAvailable": {set: []string{"podDisruptionBudget.minAvailable=2"}, check: objectIs("PodDisruptionBudget", "ebbflow-adapter", "spec.minAvailable", "2")},
		"podDisruptionBudget.maxUnavailable": {set: []string{"podDisruptionBudget.maxUnavailable=1", "podDisruptionBudget.minAvailable=null"},
			check: objectIs("PodDisruptionBudget", "ebbflow-adapter", "spec", `{"maxUnavailable":1,"unhealthyPodEvictionPolicy":"AlwaysAllow","selector":{"matchLabels":{"app.kubernetes.io/instance":"ebbflow","app.kubernetes.io/name":"ebbflow-adapter"}}}`)},
		"podDisruptionBudget.unhealthyPodEvictionPolicy": {set: []string{`podDisruptionBudget.unhealthyPodEvictionPolicy="IfHealthyBudget"`},
			check: objectIs("PodDisruptionBudget", "ebbflow-adapter", "spec.unhealthyPodEvictionPolicy", `"IfHealthyBudget"`)},
		"podSecurityContext": {set: []string{`podSecurityContext={"fsGroup":10001}`}, check: podIs("securityContext", `{"fsGroup":10001}`)},
		"securityContext":    {set: []string{`securityContext={"runAsUser":10001,"runAsNonRoot":true}`}, check: containerIs("securityContext", `{"runAsUser":10001,"runAsNonRoot":true}`)},
		"priorityClassName":  {set: []string{`priorityClassName="high"`}, check: podIs("priorityClassName", `"high"`)},
		"prometheus.url":     {set: []string{`prometheus.url="http://prom.{{ .Release.Namespace }}.svc"`}, check: argIs("--prometheus-url=http://prom.ebbflow-system.svc:9090")},
		"prometheus.port":    {set: []string{"prometheus.port=9091"}, check: argIs("--prometheus-url=http://prometheus.monitoring.svc:9091")},
		"prometheus.path":    {set: []string{`prometheus.path="/select/0/prometheus"`}, check: argIs("--prometheus-url=http://prometheus.monitoring.svc:9090/select/0/prometheus")},
		"rbac.create": {set: []string{"rbac.create=false"}, check: func(t *testing.T, r *rendered) error {
			for _, o := range r.objs {
				if strings.Contains(o.GetKind(), "Role") && strings.HasPrefix(o.GetName(), "ebbflow-adapter") {
					return fmt.Errorf("%s rendered", key(o))
				}
			}
			return nil
		}},
		"rbac.useAuthReaderClusterRole": {set: []string{"rbac.useAuthReaderClusterRole=true"},
			check: objectIs("ClusterRoleBinding", "ebbflow-adapter-auth-reader", "roleRef", `{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"extension-apiserver-authentication-reader"}`)},
		"rbac.customMetrics.resources": {set: []string{`rbac.customMetrics.resources=["pods/*"]`},
			check: objectIs("ClusterRole", "ebbflow-adapter-metrics-reader", "rules", `[{"apiGroups":["custom.metrics.k8s.io"],"resources":["pods/*"],"verbs":["get","list","watch"]},{"apiGroups":["external.metrics.k8s.io"],"resources":["*"],"verbs":["get","list","watch"]}]`)},
		"rbac.externalMetrics.resources": {set: []string{`rbac.externalMetrics.resources=["queue_depth"]`},
			check: objectIs("ClusterRole", "ebbflow-adapter-metrics-reader", "rules", `[{"apiGroups":["custom.metrics.k8s.io"],"resources":["*"],"verbs":["get","list","watch"]},{"apiGroups":["external.metrics.k8s.io"],"resources":["queue_depth"],"verbs":["get","list","watch"]}]`)},
		"replicas":             {set: []string{"replicas=4"}, check: objectIs("Deployment", "ebbflow-adapter", "spec.replicas", "4")},
		"revisionHistoryLimit": {set: []string{"revisionHistoryLimit=7"}, check: objectIs("Deployment", "ebbflow-adapter", "spec.revisionHistoryLimit", "7")},
		"resources":            {set: []string{`resources={"requests":{"cpu":"1"}}`}, check: containerIs("resources", `{"requests":{"cpu":"1"}}`)},
		"strategy":             {set: []string{`strategy={"type":"Recreate"}`}, check: objectIs("Deployment", "ebbflow-adapter", "spec.strategy", `{"type":"Recreate"}`)},
		"rules.default": {set: []string{"rules.default=false"}, check: func(t *testing.T, r *rendered) error {
			return equal(t, "rules", r.ruleFile(t)["rules"], nil)
		}},
		"rules.custom": {set: []string{`rules.custom=[{"seriesQuery":"up","resources":{"template":"<<.Resource>>"},"metricsQuery":"sum(<<.Series>>)"}]`}, check: func(t *testing.T, r *rendered) error {
			return equal(t, "number of rules", len(r.ruleFile(t)["rules"].([]any)), 7)
		}},
		"rules.external": {set: []string{`rules.external=[{"seriesQuery":"up","resources":{"namespaced":false},"metricsQuery":"sum(<<.Series>>)"}]`}, check: func(t *testing.T, r *rendered) error {
			return equal(t, "externalRules", r.ruleFile(t)["externalRules"], fromJSON(t, `[{"seriesQuery":"up","resources":{"namespaced":false},"metricsQuery":"sum(<<.Series>>)"}]`))
		}},
		"rules.existing": {set: []string{`rules.existing="my-rules"`}, check: func(t *testing.T, r *rendered) error {
			return contains(t, "volumes", r.pod["volumes"], fromJSON(t, `{"name":"config","configMap":{"name":"my-rules"}}`))
		}},
		"rules.resource": {set: []string{`rules.resource={"window":"3m"}`}, check: func(t *testing.T, r *rendered) error {
			// prometheus-adapter's chart registers metrics.k8s.io from rules.resource alone.
			if err := contains(t, "APIServices", r.apiServices(), []string{"v1.metrics.k8s.io", "v1beta1.metrics.k8s.io"}); err != nil {
				return err
			}
			if err := r.hasArg(t, "--resource-metrics=enabled"); err != nil {
				return err
			}
			return equal(t, "resourceRules", r.ruleFile(t)["resourceRules"], fromJSON(t, `{"window":"3m"}`))
		}},
		"service.annotations":                {set: []string{`service.annotations={"a":"b"}`}, check: objectIs("Service", "ebbflow-adapter", "metadata.annotations", `{"a":"b"}`)},
		"service.clusterIP":                  {set: []string{`service.clusterIP="10.96.0.50"`}, check: objectIs("Service", "ebbflow-adapter", "spec.clusterIP", `"10.96.0.50"`)},
		"service.type":                       {set: []string{`service.type="NodePort"`}, check: objectIs("Service", "ebbflow-adapter", "spec.type", `"NodePort"`)},
		"service.ipDualStack.enabled":        {set: []string{"service.ipDualStack.enabled=true"}, check: objectIs("Service", "ebbflow-adapter", "spec.ipFamilyPolicy", `"PreferDualStack"`)},
		"service.ipDualStack.ipFamilies":     {set: []string{"service.ipDualStack.enabled=true", `service.ipDualStack.ipFamilies=["IPv4"]`}, check: objectIs("Service", "ebbflow-adapter", "spec.ipFamilies", `["IPv4"]`)},
		"service.ipDualStack.ipFamilyPolicy": {set: []string{"service.ipDualStack.enabled=true", `service.ipDualStack.ipFamilyPolicy="RequireDualStack"`}, check: objectIs("Service", "ebbflow-adapter", "spec.ipFamilyPolicy", `"RequireDualStack"`)},
		"service.port": {set: []string{"service.port=8443"}, check: func(t *testing.T, r *rendered) error {
			if err := objectIs("Service", "ebbflow-adapter", "spec.ports", `[{"name":"https","port":8443,"targetPort":"https","protocol":"TCP"}]`)(t, r); err != nil {
				return err
			}
			return objectIs("APIService", "v1beta1.custom.metrics.k8s.io", "spec.service.port", "8443")(t, r)
		}},
		"serviceAccount.annotations": {set: []string{`serviceAccount.annotations={"iam.gke.io/gcp-service-account":"q@p.iam.gserviceaccount.com"}`},
			check: objectIs("ServiceAccount", "ebbflow-adapter", "metadata.annotations", `{"iam.gke.io/gcp-service-account":"q@p.iam.gserviceaccount.com"}`)},
		"serviceAccount.automountServiceAccountToken": {set: []string{"serviceAccount.automountServiceAccountToken=false"},
			check: objectIs("ServiceAccount", "ebbflow-adapter", "automountServiceAccountToken", "false")},
		"serviceAccount.create": {set: []string{"serviceAccount.create=false", `serviceAccount.name="metrics"`}, check: func(t *testing.T, r *rendered) error {
			if err := noObject("ServiceAccount", "ebbflow-adapter")(t, r); err != nil {
				return err
			}
			if err := noObject("ServiceAccount", "metrics")(t, r); err != nil {
				return err
			}
			return podIs("serviceAccountName", `"metrics"`)(t, r)
		}},
		"serviceAccount.name": {set: []string{`serviceAccount.name="metrics"`}, check: func(t *testing.T, r *rendered) error {
			if err := objectIs("ServiceAccount", "metrics", "kind", `"ServiceAccount"`)(t, r); err != nil {
				return err
			}
			if err := objectIs("ClusterRoleBinding", "ebbflow-adapter:system:auth-delegator", "subjects", `[{"kind":"ServiceAccount","name":"metrics","namespace":"ebbflow-system"}]`)(t, r); err != nil {
				return err
			}
			return podIs("serviceAccountName", `"metrics"`)(t, r)
		}},
		"tls.enable":      {set: tlsOn, check: objectIs("Secret", "ebbflow-adapter-serving-cert", "data", `{"ca.crt":"Q0E=","tls.crt":"Q0VSVA==","tls.key":"S0VZ"}`)},
		"tls.ca":          {set: tlsOn, check: objectIs("APIService", "v1beta1.external.metrics.k8s.io", "spec.caBundle", `"Q0E="`)},
		"tls.certificate": {set: tlsOn, check: objectIs("Secret", "ebbflow-adapter-serving-cert", "data", `{"ca.crt":"Q0E=","tls.crt":"Q0VSVA==","tls.key":"S0VZ"}`)},
		"tls.key":         {set: tlsOn, check: objectIs("Secret", "ebbflow-adapter-serving-cert", "data", `{"ca.crt":"Q0E=","tls.crt":"Q0VSVA==","tls.key":"S0VZ"}`)},
		"tolerations":     {set: []string{`tolerations=[{"key":"dedicated","operator":"Exists"}]`}, check: podIs("tolerations", `[{"key":"dedicated","operator":"Exists"}]`)},
		"topologySpreadConstraints": {set: []string{`topologySpreadConstraints=[{"maxSkew":2,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]`},
			check: podIs("topologySpreadConstraints", `[{"maxSkew":2,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]`)},
	}
}
