package resourcemetrics

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/metrics"
)

// Options are what the metrics.k8s.io group is served from.
type Options struct {
	// Getter gives the values. Required.
	Getter MetricsGetter
	// Pods lists and gets pod metadata (*metav1.PartialObjectMetadata) by
	// namespace and name. Required.
	Pods cache.GenericLister
	// Nodes lists and gets nodes; name and labels are all that is read. Required.
	Nodes corev1listers.NodeLister
	// Timeout bounds the getter's work for one request (<= 0: only the
	// request's own end bounds it).
	Timeout time.Duration
	// Logger logs failures and is passed to the getter in its context.
	Logger klog.Logger
}

// APIGroupInfo returns metrics.k8s.io with pods and nodes at every version of
// GroupVersions, from the same storage.
func APIGroupInfo(opts Options) (genericapiserver.APIGroupInfo, error) {
	switch {
	case opts.Getter == nil:
		return genericapiserver.APIGroupInfo{}, errors.New("resource metrics: Getter is required")
	case opts.Pods == nil:
		return genericapiserver.APIGroupInfo{}, errors.New("resource metrics: Pods is required")
	case opts.Nodes == nil:
		return genericapiserver.APIGroupInfo{}, errors.New("resource metrics: Nodes is required")
	}
	scheme := NewScheme()
	info := genericapiserver.NewDefaultAPIGroupInfo(metrics.GroupName, scheme, metav1.ParameterCodec, codecs(scheme))
	storage := map[string]rest.Storage{
		"pods":  &podStorage{getter: opts.Getter, pods: opts.Pods, logger: opts.Logger, timeout: opts.Timeout},
		"nodes": &nodeStorage{getter: opts.Getter, nodes: opts.Nodes, logger: opts.Logger, timeout: opts.Timeout},
	}
	for _, gv := range GroupVersions {
		info.VersionedResourcesStorageMap[gv.Version] = storage
	}
	return info, nil
}

// Install serves metrics.k8s.io (APIGroupInfo of opts) on srv.
func Install(srv *genericapiserver.GenericAPIServer, opts Options) error {
	info, err := APIGroupInfo(opts)
	if err != nil {
		return err
	}
	if err := srv.InstallAPIGroup(&info); err != nil {
		return fmt.Errorf("install %s: %w", metrics.GroupName, err)
	}
	return nil
}
