package server

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

// maxObjectNameLength bounds object names in metrics paths: the longest Kubernetes
// object name (a DNS subdomain).
const maxObjectNameLength = validation.DNS1123SubdomainMaxLength

// metricsPath is what a metrics request path names; empty fields are absent.
type metricsPath struct {
	group     string
	version   string
	namespace string
	// resource is the custom metric's resource ("namespaces" for a
	// namespace's own metric, whose name is then the namespace's).
	resource string
	name     string
	metric   string
}

// parseMetricsPath splits the path of a custom or external metrics request after
// its version: /namespaces/NS/RESOURCE/NAME/METRIC, /namespaces/NS/metrics/METRIC,
// /RESOURCE/NAME/METRIC (custom) and /namespaces/NS/METRIC (external). ok is false
// for paths of neither API.
func parseMetricsPath(p string) (metricsPath, bool) {
	var mp metricsPath
	var rest string
	switch {
	case strings.HasPrefix(p, "/apis/custom.metrics.k8s.io/"):
		mp.group, rest = "custom.metrics.k8s.io", strings.TrimPrefix(p, "/apis/custom.metrics.k8s.io/")
	case strings.HasPrefix(p, "/apis/external.metrics.k8s.io/"):
		mp.group, rest = "external.metrics.k8s.io", strings.TrimPrefix(p, "/apis/external.metrics.k8s.io/")
	default:
		return mp, false
	}
	seg := strings.Split(strings.Trim(rest, "/"), "/")
	mp.version, seg = seg[0], seg[1:]
	if len(seg) >= 2 && seg[0] == "namespaces" {
		mp.namespace, seg = seg[1], seg[2:]
	}
	switch {
	case mp.group == "external.metrics.k8s.io" && len(seg) == 1:
		mp.metric = seg[0]
	case len(seg) == 2 && seg[0] == "metrics":
		mp.metric = seg[1]
		if mp.namespace != "" { // a namespace's own metric
			mp.resource, mp.name = "namespaces", mp.namespace
		}
	case len(seg) == 3:
		mp.resource, mp.name, mp.metric = seg[0], seg[1], seg[2]
	}
	return mp, true
}

// historyRoute reports whether the request filter answers mp when its metric
// selector asks for a history: a custom metric of one object by name, or of
// the pods of a namespace (*). Other lists are left to the metrics handlers,
// whose provider refuses a history with a 400 saying why.
func (mp metricsPath) historyRoute() bool {
	if mp.group != "custom.metrics.k8s.io" || (mp.version != "v1beta1" && mp.version != "v1beta2") || mp.metric == "" || mp.name == "" {
		return false
	}
	return mp.name != "*" || (mp.resource == "pods" && mp.namespace != "")
}

// checkMetricsPath answers requests whose path names cannot exist before the
// metrics handlers see them: a namespace that is not a DNS label or an object name
// that is not a valid name up to 253 bytes is a 400; a metric name no rule can
// produce (longer than 253 bytes, or bytes no metric name holds) is a 404. The
// names are not echoed back in full.
func checkMetricsPath(w http.ResponseWriter, mp metricsPath) bool {
	if mp.namespace != "" {
		if errs := validation.IsDNS1123Label(mp.namespace); len(errs) > 0 {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid namespace %s: %s", shorten(mp.namespace), strings.Join(errs, "; "))))
			return false
		}
	}
	if mp.name != "" && mp.name != "*" {
		errs := content.IsPathSegmentName(mp.name)
		if len(mp.name) > maxObjectNameLength {
			errs = append(errs, fmt.Sprintf("must be no more than %d bytes", maxObjectNameLength))
		}
		if len(errs) > 0 {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid object name %s: %s", shorten(mp.name), strings.Join(errs, "; "))))
			return false
		}
	}
	if mp.metric != "" {
		if err := rules.CheckMetricName(mp.metric); err != nil {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: mp.group, Resource: "metrics"}, shorten(mp.metric)))
			return false
		}
	}
	return true
}

// shorten quotes s, cut to 64 bytes, for messages.
func shorten(s string) string {
	const keep = 64
	if len(s) > keep {
		return fmt.Sprintf("%q...", strings.ToValidUTF8(s[:keep], ""))
	}
	return fmt.Sprintf("%q", s)
}
