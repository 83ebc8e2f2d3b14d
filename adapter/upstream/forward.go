package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	"k8s.io/metrics/pkg/apis/external_metrics"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

// The versions requests are forwarded in.
const (
	customVersion   = "v1beta2"
	externalVersion = "v1beta1"
)

// customPath is the path of a custom metric of one object (name) or of all
// (cmv1beta2.AllObjects), as custom-metrics-apiserver routes it; false when a
// segment would not stay one path segment.
func customPath(info provider.CustomMetricInfo, namespace, name string) (string, bool) {
	segs := []string{"apis", GroupCustom, customVersion}
	switch {
	case info.GroupResource.Group == "" && info.GroupResource.Resource == "namespaces":
		segs = append(segs, "namespaces", name, "metrics", info.Metric)
	case info.Namespaced && namespace != "":
		segs = append(segs, "namespaces", namespace, info.GroupResource.String(), name, info.Metric)
	default:
		segs = append(segs, info.GroupResource.String(), name, info.Metric)
	}
	return joinSegments(segs)
}

// externalPath is the path of an external metric in namespace.
func externalPath(namespace, metric string) (string, bool) {
	return joinSegments([]string{"apis", GroupExternal, externalVersion, "namespaces", namespace, metric})
}

// joinSegments is the absolute path of segs (client-go escapes it); false
// when one is empty, "." or "..", or holds a '/'.
func joinSegments(segs []string) (string, bool) {
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.Contains(s, "/") {
			return "", false
		}
	}
	return "/" + strings.Join(segs, "/"), true
}

// selectorParam is the query parameter of a selector; nil or empty is none.
func selectorParam(s labels.Selector) string {
	if s == nil || s.Empty() {
		return ""
	}
	return s.String()
}

// customList forwards a custom-metrics request and decodes its answer.
// An answer for one object must hold one item.
func (u *Upstream) customList(ctx context.Context, info provider.CustomMetricInfo, namespace, name string, selector, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error) {
	path, ok := customPath(info, namespace, name)
	if !ok {
		return nil, provider.NewMetricNotFoundForError(info.GroupResource, info.Metric, name)
	}
	start := time.Now()
	body, err := u.client.get(ctx, path, map[string]string{
		"labelSelector": selectorParam(selector), "metricLabelSelector": selectorParam(metricSelector),
	})
	var out *custom_metrics.MetricValueList
	if err == nil {
		out, err = decodeCustom(body)
	}
	if err == nil && name != cmv1beta2.AllObjects && len(out.Items) != 1 {
		err = fmt.Errorf("%w: %d items for one object", errGarbage, len(out.Items))
	}
	return out, u.outcome(ctx, GroupCustom, start, err, func() error {
		return provider.NewMetricNotFoundForError(info.GroupResource, info.Metric, name)
	})
}

// GetMetricByName forwards one object's custom metric.
func (u *Upstream) GetMetricByName(ctx context.Context, name types.NamespacedName, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValue, error) {
	list, err := u.customList(ctx, info, name.Namespace, name.Name, nil, metricSelector)
	if err != nil {
		return nil, err
	}
	return &list.Items[0], nil
}

// GetMetricBySelector forwards the custom metric of the objects selector selects.
func (u *Upstream) GetMetricBySelector(ctx context.Context, namespace string, selector labels.Selector, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error) {
	return u.customList(ctx, info, namespace, cmv1beta2.AllObjects, selector, metricSelector)
}

// GetExternalMetric forwards an external metric.
func (u *Upstream) GetExternalMetric(ctx context.Context, namespace string, metricSelector labels.Selector, info provider.ExternalMetricInfo) (*external_metrics.ExternalMetricValueList, error) {
	path, ok := externalPath(namespace, info.Metric)
	if !ok {
		return nil, provider.NewMetricNotFoundError(externalResource, info.Metric)
	}
	start := time.Now()
	body, err := u.client.get(ctx, path, map[string]string{"labelSelector": selectorParam(metricSelector)})
	var out *external_metrics.ExternalMetricValueList
	if err == nil {
		out, err = decodeExternal(body)
	}
	return out, u.outcome(ctx, GroupExternal, start, err, func() error {
		return provider.NewMetricNotFoundError(externalResource, info.Metric)
	})
}

// errGarbage marks an answer that does not decode as what was asked.
var errGarbage = errors.New("answer is not a metric list")

func decodeCustom(body []byte) (*custom_metrics.MetricValueList, error) {
	var v cmv1beta2.MetricValueList
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("%w: %w", errGarbage, err)
	}
	if v.Kind != "MetricValueList" || v.APIVersion != GroupCustom+"/"+customVersion {
		return nil, fmt.Errorf("%w: kind %q, apiVersion %q", errGarbage, v.Kind, v.APIVersion)
	}
	var out custom_metrics.MetricValueList
	if err := cmv1beta2.Convert_v1beta2_MetricValueList_To_custom_metrics_MetricValueList(&v, &out, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", errGarbage, err)
	}
	return &out, nil
}

func decodeExternal(body []byte) (*external_metrics.ExternalMetricValueList, error) {
	var v emv1beta1.ExternalMetricValueList
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("%w: %w", errGarbage, err)
	}
	if v.Kind != "ExternalMetricValueList" || v.APIVersion != GroupExternal+"/"+externalVersion {
		return nil, fmt.Errorf("%w: kind %q, apiVersion %q", errGarbage, v.Kind, v.APIVersion)
	}
	var out external_metrics.ExternalMetricValueList
	if err := emv1beta1.Convert_v1beta1_ExternalMetricValueList_To_external_metrics_ExternalMetricValueList(&v, &out, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", errGarbage, err)
	}
	return &out, nil
}

// outcome records a forwarded request and turns its error into what the
// caller sees: the upstream's 404 becomes Ebbflow's own (notFound), its 400 a
// 400 naming the upstream, anything else (unreachable, slow, 5xx, refused
// credentials, garbage, too large) a 503 naming the upstream. The detail is
// logged, never returned.
func (u *Upstream) outcome(ctx context.Context, group string, start time.Time, err error, notFound func() error) error {
	result := "success"
	var out error
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		result, out = "not_found", notFound()
	case apierrors.IsBadRequest(err):
		result, out = "bad_request", apierrors.NewBadRequest(fmt.Sprintf("upstream %q refused the request as malformed", u.cfg.Name))
	default:
		result, out = "unavailable", u.unavailable()
		code := 0
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			code = int(status.Status().Code)
		}
		klog.FromContext(ctx).Info("Upstream request failed", "upstream", u.cfg.Name, "group", group, "status", code, "err", err)
	}
	u.metrics.observe(u.cfg.Name, group, result, time.Since(start))
	return out
}

// unavailable is the 503 a caller sees for this upstream.
func (u *Upstream) unavailable() error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("upstream %q unavailable", u.cfg.Name))
}
