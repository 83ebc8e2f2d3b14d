// Package v1alpha1 is the v1alpha1 version of the autoscaling.ebbflow.dev API:
// the Autoscaler resource, whose spec and status are field for field the
// autoscaling/v2 HorizontalPodAutoscaler spec and status, so that an HPA spec
// can be pasted into an Autoscaler unchanged.
//
// Generated code lives next to the types (zz_generated.deepcopy.go) and under
// autoscaler/generated (clientset, informers, listers); regenerate with
// hack/update-codegen.sh.
//
// +k8s:deepcopy-gen=package
// +groupName=autoscaling.ebbflow.dev
package v1alpha1
