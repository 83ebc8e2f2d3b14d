package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// crdRule maps a label to a custom resource (Argo Rollouts), which the built-in
// resources do not know.
const crdRule = `
rules:
- seriesQuery: '{__name__="http_requests_total",namespace!="",rollout!=""}'
  resources: {overrides: {namespace: {resource: namespace}, rollout: {group: argoproj.io, resource: rollout}}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
`

// apiResourcesTable is what kubectl api-resources -o wide prints (SHORTNAMES empty
// on some lines).
const apiResourcesTable = `NAME          SHORTNAMES   APIVERSION              NAMESPACED   KIND         VERBS                                        CATEGORIES
namespaces    ns           v1                      false        Namespace    create,delete,get,list,patch,update,watch
pods          po           v1                      true         Pod          create,delete,deletecollection,get,list      all
rollouts      ro           argoproj.io/v1alpha1    true         Rollout      create,delete,get,list,patch,update,watch
widgets                    example.com/v1          false        Widget       get,list
`

func rolloutList() metav1.APIResourceList {
	return metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: "argoproj.io/v1alpha1",
		APIResources: []metav1.APIResource{{Name: "rollouts", SingularName: "rollout", Namespaced: true, Kind: "Rollout"}},
	}
}

func TestConfigCheckCustomResources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rulesFile := write("rules.yaml", crdRule)
	list, _ := json.Marshal(rolloutList())
	apiServer := httptest.NewServer(discoveryHandler(t))
	defer apiServer.Close()
	kubeconfig := write("kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+apiServer.URL+`"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`)

	if _, err := run(t, "config", "check", rulesFile); err == nil || !strings.Contains(err.Error(), `resources.overrides.rollout: unknown resource "rollout" in group "argoproj.io"`) {
		t.Fatalf("check without the cluster's resources: %v, want the CRD unknown", err)
	}
	for name, args := range map[string][]string{
		"kubectl api-resources table": {"--api-resources", write("api-resources.txt", apiResourcesTable)},
		"APIResourceList JSON":        {"--api-resources", write("list.json", string(list)+"\n"+string(list))},
		"APIResourceList YAML":        {"--api-resources", write("list.yaml", "kind: APIResourceList\ngroupVersion: argoproj.io/v1alpha1\nresources:\n- {name: rollouts, kind: Rollout, namespaced: true}\n")},
		"discovery of a cluster":      {"--kubeconfig", kubeconfig},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, append([]string{"config", "check", rulesFile}, args...)...)
			if err != nil || !strings.Contains(out, "is valid: 1 custom rules") {
				t.Errorf("check: %v\n%s", err, out)
			}
		})
	}
	for name, tc := range map[string]struct{ text, want string }{
		"table without KIND":    {"NAME APIVERSION NAMESPACED\npods v1 true\n", "line 1: the header has no KIND column"},
		"table with a bad line": {"NAME  APIVERSION  NAMESPACED  KIND\npods  v1          maybe       Pod\n", "line 2: want NAME, KIND and NAMESPACED true or false"},
		"list of another kind":  {`{"kind": "APIGroupList", "groupVersion": "v1"}`, "APIResourceList 0: kind: want APIResourceList"},
		"list without version":  {`{"kind": "APIResourceList", "groupVersion": "x/"}`, "APIResourceList 0: groupVersion"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, "config", "check", rulesFile, "--api-resources", write("bad.txt", tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check error = %v, want %q", err, tc.want)
			}
		})
	}
}

// discoveryHandler serves the discovery documents of a cluster with the core group
// (namespaces, pods) and argoproj.io/v1alpha1, as kube-apiserver's legacy discovery.
func discoveryHandler(t *testing.T) http.Handler {
	core := metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "namespaces", SingularName: "namespace", Kind: "Namespace"},
		{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod"},
	}}
	gv := metav1.GroupVersionForDiscovery{GroupVersion: "argoproj.io/v1alpha1", Version: "v1alpha1"}
	docs := map[string]any{
		"/api":                       metav1.APIVersions{Versions: []string{"v1"}},
		"/api/v1":                    core,
		"/apis":                      metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "argoproj.io", Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}}},
		"/apis/argoproj.io/v1alpha1": rolloutList(),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(doc); err != nil {
			t.Error(err)
		}
	})
}

func TestConfigCheckStrict(t *testing.T) {
	file := filepath.Join(t.TempDir(), "odd.yaml")
	odd := strings.Replace(crdRule, `"${1}_per_second"`, `"$1_per_second"`, 1)
	odd = strings.Replace(odd, "rollout: {group: argoproj.io, resource: rollout}", "pod: {resource: pod}", 1)
	if err := os.WriteFile(file, []byte(odd), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "config", "check", file)
	const warning = `warning: rules[0] (seriesQuery "{__name__=\"http_requests_total\",namespace!=\"\",rollout!=\"\"}"): name.as: refers to capture group "1_per_second"`
	if err != nil || !strings.Contains(out, warning) {
		t.Fatalf("plain check: %v, want success with the warning:\n%s", err, out)
	}
	out, err = run(t, "config", "check", "--strict", file)
	if err == nil || !strings.Contains(err.Error(), "has 1 warnings (--strict)") || !strings.Contains(out, warning) {
		t.Fatalf("strict check: %v, want a failure after the warning:\n%s", err, out)
	}
}
