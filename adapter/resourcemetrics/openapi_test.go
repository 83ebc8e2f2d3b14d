package resourcemetrics

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	metricsv1 "k8s.io/metrics/pkg/apis/metrics/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// jsonShape describes a type by its JSON fields and their types' shapes, down
// to types outside the metrics packages (named by their Go name).
func jsonShape(t reflect.Type) string {
	if t.Kind() == reflect.Slice {
		return "[]" + jsonShape(t.Elem())
	}
	if t.Kind() != reflect.Struct || !strings.HasPrefix(t.PkgPath(), "k8s.io/metrics/") {
		return t.String()
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range t.NumField() {
		f := t.Field(i)
		b.WriteString(f.Tag.Get("json") + ":" + jsonShape(f.Type) + ";")
	}
	b.WriteString("}")
	return b.String()
}

// TestV1TypesAreV1beta1s holds what GetOpenAPIDefinitions relies on: v1's
// types have v1beta1's fields, so v1beta1's models describe them.
func TestV1TypesAreV1beta1s(t *testing.T) {
	for _, pair := range [][2]any{
		{metricsv1.PodMetricsList{}, metricsv1beta1.PodMetricsList{}},
		{metricsv1.NodeMetricsList{}, metricsv1beta1.NodeMetricsList{}},
	} {
		v1, beta := jsonShape(reflect.TypeOf(pair[0])), jsonShape(reflect.TypeOf(pair[1]))
		if v1 != beta {
			t.Errorf("v1 %s\nv1beta1 %s", v1, beta)
		}
	}
}

// TestOpenAPIV3BothVersions: each version's OpenAPI v3 document (what kubectl
// explain reads) has the PodMetrics and NodeMetrics models of that version,
// tagged with their group, version and kind, whose references stay within
// the version.
func TestOpenAPIV3BothVersions(t *testing.T) {
	h := newHandler(t, fixtureGetter())
	for _, v := range versions {
		code, body := get(t, h, "/openapi/v3/apis/metrics.k8s.io/"+v, "")
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", v, code, body)
		}
		var doc struct {
			Paths      map[string]any `json:"paths"`
			Components struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := doc.Paths["/apis/metrics.k8s.io/"+v+"/namespaces/{namespace}/pods/{name}"]; !ok {
			t.Errorf("%s: no pod path in %d paths", v, len(doc.Paths))
		}
		other := map[string]string{"v1": "v1beta1", "v1beta1": "v1"}[v]
		for _, kind := range []string{"PodMetrics", "PodMetricsList", "NodeMetrics", "NodeMetricsList", "ContainerMetrics"} {
			name := "io.k8s.metrics.pkg.apis.metrics." + v + "." + kind
			raw, ok := doc.Components.Schemas[name]
			if !ok {
				t.Errorf("%s: no model %s", v, name)
				continue
			}
			s := string(raw)
			if kind != "ContainerMetrics" && !strings.Contains(s, `"version":"`+v+`"`) {
				t.Errorf("%s: %s has no group-version-kind of %s: %s", v, name, v, s)
			}
			if strings.Contains(s, "metrics."+other+".") {
				t.Errorf("%s: %s refers to %s models: %s", v, name, other, s)
			}
		}
	}
}
