package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestPlatformTeamValues gives the chart a prometheus-adapter chart values file
// of a platform team on a managed cluster (testdata/values-platform-team.yaml,
// prometheus-adapter's layout, unchanged) and requires each of its values in
// the rendered objects, at the place prometheus-adapter's chart puts it. Every
// value of the file must have a check here: a value added to the file without
// one fails the test.
func TestPlatformTeamValues(t *testing.T) {
	const file = "values-platform-team.yaml"
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := sigsyaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	r, err := renderJSON(t, []string{file})
	if err != nil {
		t.Fatal(err)
	}
	if r.deploy == nil {
		t.Fatal("no adapter Deployment")
	}
	checks := platformChecks(r)
	keys := leafKeys(values, "", map[string]bool{"serviceAccount": true, "hostNetwork": true, "prometheus": true, "rules": true})
	t.Logf("%d values in %s", len(keys), file)
	for _, k := range keys {
		check, ok := checks[k]
		if !ok {
			t.Errorf("%s: no check of where the value is rendered; add one to platformChecks", k)
			continue
		}
		if err := check(t, at(values, k)); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}

// platformChecks are, per values key, where prometheus-adapter's chart renders
// it, looked up in r.
func platformChecks(r *rendered) map[string]func(*testing.T, any) error {
	podField := func(f string) func(*testing.T, any) error {
		return func(t *testing.T, v any) error { return equal(t, "pod spec "+f, r.pod[f], v) }
	}
	return map[string]func(*testing.T, any) error{
		"replicas": func(t *testing.T, v any) error {
			return equal(t, "Deployment replicas", at(r.deploy.Object, "spec.replicas"), v)
		},
		"revisionHistoryLimit": func(t *testing.T, v any) error {
			return equal(t, "Deployment revisionHistoryLimit", at(r.deploy.Object, "spec.revisionHistoryLimit"), v)
		},
		"strategy": func(t *testing.T, v any) error {
			return equal(t, "Deployment strategy", at(r.deploy.Object, "spec.strategy"), v)
		},
		"deploymentAnnotations": func(t *testing.T, v any) error {
			return subset(t, "Deployment annotations", r.deploy.GetAnnotations(), v)
		},
		"logLevel":              func(t *testing.T, v any) error { return r.hasArg(t, fmt.Sprintf("--v=%v", v)) },
		"metricsRelistInterval": func(t *testing.T, v any) error { return r.hasArg(t, fmt.Sprintf("--metrics-relist-interval=%v", v)) },
		"extraArguments": func(t *testing.T, v any) error {
			return contains(t, "adapter args", r.container["args"], v)
		},
		"env": func(t *testing.T, v any) error { return contains(t, "adapter env", r.container["env"], v) },
		"resources": func(t *testing.T, v any) error {
			return equal(t, "adapter resources", r.container["resources"], v)
		},
		"priorityClassName":         podField("priorityClassName"),
		"nodeSelector":              podField("nodeSelector"),
		"tolerations":               podField("tolerations"),
		"affinity":                  podField("affinity"),
		"topologySpreadConstraints": podField("topologySpreadConstraints"),
		"dnsPolicy":                 podField("dnsPolicy"),
		"hostNetwork.enabled":       podField("hostNetwork"),
		"podLabels": func(t *testing.T, v any) error {
			l, _, _ := unstructured.NestedStringMap(r.deploy.Object, "spec", "template", "metadata", "labels")
			return subset(t, "pod labels", l, v)
		},
		"podAnnotations": func(t *testing.T, v any) error {
			a, _, _ := unstructured.NestedStringMap(r.deploy.Object, "spec", "template", "metadata", "annotations")
			return subset(t, "pod annotations", a, v)
		},
		"extraContainers": func(t *testing.T, v any) error {
			cs, _ := r.pod["containers"].([]any)
			if len(cs) < 2 {
				return fmt.Errorf("the pod has %d containers", len(cs))
			}
			return equal(t, "containers after the adapter", cs[1:], v)
		},
		"serviceAccount.name": func(t *testing.T, v any) error {
			if sa := find(r.objs, "ServiceAccount", v.(string)); sa == nil {
				return fmt.Errorf("no ServiceAccount %v", v)
			}
			// Every binding of the adapter's own identity names that account.
			for _, n := range []string{"ClusterRoleBinding ebbflow-adapter:system:auth-delegator", "RoleBinding kube-system/ebbflow-adapter-auth-reader", "ClusterRoleBinding ebbflow-adapter-resource-reader"} {
				o := byKey(t, r.objs)[n]
				if o == nil {
					return fmt.Errorf("no %s", n)
				}
				if s := toYAML(t, o.Object["subjects"]); !strings.Contains(s, "name: "+v.(string)+"\n") {
					return fmt.Errorf("%s binds %s", n, s)
				}
			}
			return equal(t, "pod serviceAccountName", r.pod["serviceAccountName"], v)
		},
		"serviceAccount.annotations": func(t *testing.T, v any) error {
			sa := findSuffix(r.objs, "ServiceAccount", "prometheus-adapter")
			if sa == nil {
				return fmt.Errorf("no ServiceAccount prometheus-adapter")
			}
			return subset(t, "ServiceAccount annotations", sa.GetAnnotations(), v)
		},
		"podDisruptionBudget": func(t *testing.T, v any) error {
			pdb := find(r.objs, "PodDisruptionBudget", "ebbflow-adapter")
			if pdb == nil {
				return fmt.Errorf("no PodDisruptionBudget")
			}
			want := map[string]any{"minAvailable": at(v.(map[string]any), "minAvailable"), "unhealthyPodEvictionPolicy": "AlwaysAllow"}
			spec := pdb.Object["spec"].(map[string]any)
			return equal(t, "PDB spec", map[string]any{"minAvailable": spec["minAvailable"], "unhealthyPodEvictionPolicy": spec["unhealthyPodEvictionPolicy"]}, want)
		},
		"prometheus.url":  func(t *testing.T, v any) error { return r.prometheusURL(t) },
		"prometheus.port": func(t *testing.T, v any) error { return r.prometheusURL(t) },
		"prometheus.path": func(t *testing.T, v any) error { return r.prometheusURL(t) },
		"rules.default": func(t *testing.T, v any) error {
			return equal(t, "number of custom rules", len(r.ruleFile(t)["rules"].([]any)), 1)
		},
		"rules.custom":   func(t *testing.T, v any) error { return equal(t, "rules", r.ruleFile(t)["rules"], v) },
		"rules.external": func(t *testing.T, v any) error { return equal(t, "externalRules", r.ruleFile(t)["externalRules"], v) },
	}
}

// prometheusURL checks the file's Prometheus URL, port and path, joined.
func (r *rendered) prometheusURL(t *testing.T) error {
	return r.hasArg(t, "--prometheus-url=http://localhost:8005/workspaces/ws-0123abcd-4567-89ef-0123-456789abcdef")
}
