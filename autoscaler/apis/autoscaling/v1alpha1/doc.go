// Package v1alpha1 is the v1alpha1 version of the autoscaling.ebbflow.dev API:
// the Autoscaler resource, whose spec and status are field for field the
// autoscaling/v2 HorizontalPodAutoscaler spec and status, so that an HPA spec
// can be pasted into an Autoscaler unchanged.
//
// Generated code lives next to the types (zz_generated.deepcopy.go) and under
// autoscaler/generated (clientset, informers, listers); regenerate with
// hack/update-codegen.sh.
//
// CRD validation follows kube-apiserver's HPA validation
// (pkg/apis/autoscaling/validation) so that what an HPA accepts an
// Autoscaler accepts, and what it rejects is rejected too (the exceptions
// are listed in manifests/autoscaler/README.md). It comes from two places.
// Markers on these types give the top-level bounds (maxReplicas >= 1,
// minReplicas >= 0 defaulting to 1, metrics defaulting to 80% CPU as for an
// HPA, at most 100 metrics), the required fields and the CEL rules
// that span fields (minReplicas <= maxReplicas, scale to zero only with an
// Object or External metric, the metric source matching metrics[].type, the
// target values each source needs). The HPA types nested in the spec come
// from k8s.io/api and carry no kubebuilder markers, so their enums and bounds
// (metric, target, policy and selectPolicy types, stabilizationWindowSeconds
// 0..3600, periodSeconds 1..1800, positive targets, non-empty names) are a
// JSON patch, manifests/autoscaler/crd-schema-patch.yaml, that
// hack/update-codegen.sh applies to controller-gen's output.
//
// +k8s:deepcopy-gen=package
// +groupName=autoscaling.ebbflow.dev
package v1alpha1
