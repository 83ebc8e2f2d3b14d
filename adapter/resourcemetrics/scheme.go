package resourcemetrics

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/metrics/pkg/apis/metrics/install"
	metricsv1 "k8s.io/metrics/pkg/apis/metrics/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// GroupVersions are the versions of metrics.k8s.io served, preferred first.
var GroupVersions = []schema.GroupVersion{metricsv1.SchemeGroupVersion, metricsv1beta1.SchemeGroupVersion}

// NewScheme returns a scheme holding metrics.k8s.io's internal types, both
// served versions with their conversions (v1 preferred), and the unversioned
// meta types the API server needs for options and status.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// codecs returns the codec factory serving s.
func codecs(s *runtime.Scheme) serializer.CodecFactory { return serializer.NewCodecFactory(s) }
