package resourcemetrics

import (
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ebbflow/ebbflow/adapter/resourcemetrics/fake"
)

var versions = []string{"v1", "v1beta1"}

// names returns "namespace/name" (or "name") of a list's items, in order.
func names(t *testing.T, list map[string]any) []string {
	t.Helper()
	items, _ := list["items"].([]any)
	out := []string{}
	for _, it := range items {
		meta := it.(map[string]any)["metadata"].(map[string]any)
		name := meta["name"].(string)
		if ns, ok := meta["namespace"].(string); ok {
			name = ns + "/" + name
		}
		out = append(out, name)
	}
	return out
}

func TestListsAndGets(t *testing.T) {
	h := newHandler(t, fixtureGetter())
	for _, v := range versions {
		base := "/apis/metrics.k8s.io/" + v
		for _, tc := range []struct {
			name, path string
			want       []string
		}{
			{"pods of a namespace, without the pod with no values", "/namespaces/a/pods", []string{"a/web-0", "a/web-1"}},
			{"pods of another namespace", "/namespaces/b/pods", []string{"b/web-0"}},
			{"pods of a namespace without pods", "/namespaces/c/pods", []string{}},
			{"pods of all namespaces, by namespace and name", "/pods", []string{"a/web-0", "a/web-1", "b/web-0"}},
			{"label selector", "/pods?labelSelector=app%3Ddb", []string{}},
			{"label selector in a namespace", "/namespaces/a/pods?labelSelector=app%3Dweb", []string{"a/web-0", "a/web-1"}},
			{"set-based label selector", "/pods?labelSelector=app+notin+(web)", []string{}},
			{"field selector on the name", "/pods?fieldSelector=metadata.name%3Dweb-0", []string{"a/web-0", "b/web-0"}},
			{"field selector on the namespace", "/pods?fieldSelector=metadata.namespace%21%3Da", []string{"b/web-0"}},
			{"nodes, without the node with no values", "/nodes", []string{"n1", "n2"}},
			{"nodes by label", "/nodes?labelSelector=zone%3Dx", []string{"n1"}},
			{"nodes by name", "/nodes?fieldSelector=metadata.name%3Dn2", []string{"n2"}},
		} {
			t.Run(v+"/"+tc.name, func(t *testing.T) {
				code, list := getJSON(t, h, base+tc.path)
				if code != http.StatusOK {
					t.Fatalf("GET %s: %d %v", tc.path, code, list)
				}
				if got := names(t, list); !slices.Equal(got, tc.want) {
					t.Errorf("GET %s: %v, want %v", tc.path, got, tc.want)
				}
				wantKind := "PodMetricsList"
				if strings.Contains(tc.path, "/nodes") {
					wantKind = "NodeMetricsList"
				}
				if list["apiVersion"] != "metrics.k8s.io/"+v || list["kind"] != wantKind {
					t.Errorf("GET %s: apiVersion %v kind %v", tc.path, list["apiVersion"], list["kind"])
				}
			})
		}
		t.Run(v+"/get pod", func(t *testing.T) {
			code, pod := getJSON(t, h, base+"/namespaces/a/pods/web-1")
			if code != http.StatusOK || pod["kind"] != "PodMetrics" || pod["apiVersion"] != "metrics.k8s.io/"+v {
				t.Fatalf("%d %v", code, pod)
			}
			containers := pod["containers"].([]any)
			if len(containers) != 2 || pod["window"] != "1m0s" || pod["timestamp"] != "2026-12-02T03:00:00Z" {
				t.Errorf("web-1 = %v", pod)
			}
			if u := containers[1].(map[string]any)["usage"].(map[string]any); u["cpu"] != "125m" || u["memory"] != "32Mi" {
				t.Errorf("sidecar usage %v", u)
			}
		})
		t.Run(v+"/get node", func(t *testing.T) {
			code, node := getJSON(t, h, base+"/nodes/n1")
			u, _ := node["usage"].(map[string]any)
			if code != http.StatusOK || node["kind"] != "NodeMetrics" || u["cpu"] != "1500m" || u["memory"] != "2Gi" {
				t.Errorf("%d %v", code, node)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	h := newHandler(t, fixtureGetter())
	for _, v := range versions {
		base := "/apis/metrics.k8s.io/" + v
		for _, tc := range []struct{ path, message string }{
			{"/namespaces/a/pods/nope", `pods "nope" not found`},
			{"/namespaces/a/pods/db-0", `podmetrics.metrics.k8s.io "a/db-0" not found`},
			{"/namespaces/b/pods/web-1", `pods "web-1" not found`}, // a's pod, asked in b
			{"/nodes/nope", `node "nope" not found`},
			{"/nodes/n3", `nodemetrics.metrics.k8s.io "n3" not found`},
		} {
			t.Run(v+tc.path, func(t *testing.T) {
				code, status := getJSON(t, h, base+tc.path)
				if code != http.StatusNotFound || status["reason"] != "NotFound" || status["message"] != tc.message {
					t.Errorf("GET %s: %d %v, want 404 %q", tc.path, code, status, tc.message)
				}
			})
		}
	}
	// A field selector on a field metrics objects lack is refused, naming it.
	for _, v := range versions {
		code, status := getJSON(t, h, "/apis/metrics.k8s.io/"+v+"/pods?fieldSelector=spec.nodeName%3Dn1")
		if msg, _ := status["message"].(string); code != http.StatusBadRequest || !strings.Contains(msg, `"spec.nodeName" is not a known field selector`) {
			t.Errorf("%s: field selector spec.nodeName: %d %v, want 400 naming it", v, code, status)
		}
	}
	for _, path := range []string{"/apis/metrics.k8s.io/v2/nodes", "/apis/metrics.k8s.io/v1/podmetrics", "/apis/metrics.k8s.io/v1alpha1/nodes"} {
		if code, _ := get(t, h, path, ""); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, code)
		}
	}
}

// TestVersionsAnswerTheSame: every answer at v1 is the v1beta1 answer but for
// apiVersion.
func TestVersionsAnswerTheSame(t *testing.T) {
	h := newHandler(t, fixtureGetter())
	for _, path := range []string{"/pods", "/namespaces/a/pods", "/namespaces/a/pods/web-1", "/nodes", "/nodes/n2", "/namespaces/a/pods/db-0", "/nodes?labelSelector=zone%3Dy"} {
		_, v1 := get(t, h, "/apis/metrics.k8s.io/v1"+path, "")
		_, beta := get(t, h, "/apis/metrics.k8s.io/v1beta1"+path, "")
		want := strings.ReplaceAll(string(beta), `"apiVersion":"metrics.k8s.io/v1beta1"`, `"apiVersion":"metrics.k8s.io/v1"`)
		if string(v1) != want {
			t.Errorf("GET %s:\nv1      %s\nv1beta1 %s", path, v1, beta)
		}
	}
}

func TestDiscovery(t *testing.T) {
	h := newHandler(t, fixtureGetter())
	code, group := getJSON(t, h, "/apis/metrics.k8s.io")
	pref, _ := group["preferredVersion"].(map[string]any)
	if code != http.StatusOK || pref["groupVersion"] != "metrics.k8s.io/v1" || len(group["versions"].([]any)) != 2 {
		t.Errorf("group: %d %v", code, group)
	}
	for _, v := range versions {
		_, list := getJSON(t, h, "/apis/metrics.k8s.io/"+v)
		var got []string
		for _, r := range list["resources"].([]any) {
			r := r.(map[string]any)
			got = append(got, r["name"].(string)+" "+r["kind"].(string)+" "+strings.Join(toStrings(r["verbs"]), ","))
		}
		slices.Sort(got)
		if want := []string{"nodes NodeMetrics get,list", "pods PodMetrics get,list"}; !slices.Equal(got, want) {
			t.Errorf("%s resources %v, want %v", v, got, want)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func TestGetterErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		code    int
		message string
	}{
		{"status error passed through", apierrors.NewServiceUnavailable("upstream metrics-server: no answer in 5s"), http.StatusServiceUnavailable, "upstream metrics-server: no answer in 5s"},
		{"other error a 500 saying what failed", errors.New("boom"), http.StatusInternalServerError, "Internal error occurred: failed reading pods metrics: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandler(t, &fake.Getter{Err: tc.err})
			for _, v := range versions {
				code, status := getJSON(t, h, "/apis/metrics.k8s.io/"+v+"/namespaces/a/pods")
				if code != tc.code || status["message"] != tc.message {
					t.Errorf("%s: %d %v, want %d %q", v, code, status, tc.code, tc.message)
				}
			}
		})
	}
}

// TestGetterAskedOnlySelected: the getter is asked about the selected objects
// only (one call per request), not about every pod of the cache.
func TestGetterAskedOnlySelected(t *testing.T) {
	g := fixtureGetter()
	h := newHandler(t, g)
	get(t, h, "/apis/metrics.k8s.io/v1/namespaces/a/pods?labelSelector=app%3Dweb", "")
	get(t, h, "/apis/metrics.k8s.io/v1/pods?fieldSelector=metadata.namespace%3Db", "")
	get(t, h, "/apis/metrics.k8s.io/v1/nodes?labelSelector=zone%3Dx", "")
	if got := g.Asked(); !reflect.DeepEqual(got, []int{2, 1, 2}) {
		t.Errorf("getter asked about %v objects, want [2 1 2]", got)
	}
}
