package resourcemetrics

import (
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	metricsv1 "k8s.io/metrics/pkg/apis/metrics/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	msopenapi "sigs.k8s.io/metrics-server/pkg/api/generated/openapi"
)

// v1ModelNames maps each metrics.k8s.io/v1beta1 model to its v1 twin.
var v1ModelNames = map[string]string{
	metricsv1beta1.ContainerMetrics{}.OpenAPIModelName(): metricsv1.ContainerMetrics{}.OpenAPIModelName(),
	metricsv1beta1.PodMetrics{}.OpenAPIModelName():       metricsv1.PodMetrics{}.OpenAPIModelName(),
	metricsv1beta1.PodMetricsList{}.OpenAPIModelName():   metricsv1.PodMetricsList{}.OpenAPIModelName(),
	metricsv1beta1.NodeMetrics{}.OpenAPIModelName():      metricsv1.NodeMetrics{}.OpenAPIModelName(),
	metricsv1beta1.NodeMetricsList{}.OpenAPIModelName():  metricsv1.NodeMetricsList{}.OpenAPIModelName(),
}

// GetOpenAPIDefinitions returns the OpenAPI models of the group at both
// versions, with the meta types they use. The v1beta1 ones are
// metrics-server's generated definitions; v1's types are field for field
// v1beta1's (k8s.io/metrics converts between them without loss, and a test
// holds the two to the same fields), so the v1 models are the v1beta1 models
// under the v1 names, referring to each other by their v1 names.
func GetOpenAPIDefinitions(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
	defs := msopenapi.GetOpenAPIDefinitions(ref)
	toV1 := func(name string) string {
		if v1, ok := v1ModelNames[name]; ok {
			return v1
		}
		return name
	}
	v1Defs := msopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref { return ref(toV1(name)) })
	for beta, v1 := range v1ModelNames {
		def := v1Defs[beta]
		deps := make([]string, len(def.Dependencies))
		for i, d := range def.Dependencies {
			deps[i] = toV1(d)
		}
		def.Dependencies = deps
		defs[v1] = def
	}
	return defs
}
