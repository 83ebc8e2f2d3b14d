package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

// MaxListed bounds the metrics one upstream may list in one group; a longer
// list is refused (the last good one stays).
const MaxListed = 100000

// externalResource names external metrics in not-found errors.
var externalResource = schema.GroupResource{Group: GroupExternal}

// Upstream is one upstream metrics server: its client and the metrics it
// listed at its last successful discovery of each group.
type Upstream struct {
	cfg     Config
	client  *client
	metrics *metrics
	list    atomic.Pointer[listing]
}

// listing is an immutable snapshot of what an upstream lists.
type listing struct {
	custom   map[provider.CustomMetricInfo]bool
	external map[string]bool
}

// Name is the upstream's name.
func (u *Upstream) Name() string { return u.cfg.Name }

// Config is the upstream's configuration.
func (u *Upstream) Config() Config { return u.cfg }

// ListsCustom reports whether the upstream listed info (its resource plural,
// in its group) at its last discovery.
func (u *Upstream) ListsCustom(info provider.CustomMetricInfo) bool {
	return u.list.Load().custom[info]
}

// ListsExternal reports whether the upstream listed the external metric.
func (u *Upstream) ListsExternal(metric string) bool {
	return u.list.Load().external[metric]
}

// customMetrics lists the custom metrics of the last discovery, sorted.
func (u *Upstream) customMetrics() []provider.CustomMetricInfo {
	l := u.list.Load()
	out := make([]provider.CustomMetricInfo, 0, len(l.custom))
	for info := range l.custom {
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b provider.CustomMetricInfo) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// externalMetrics lists the external metrics of the last discovery, sorted.
func (u *Upstream) externalMetrics() []string {
	l := u.list.Load()
	out := make([]string, 0, len(l.external))
	for m := range l.external {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// newUpstream builds the client of u, forwarding with identity; nothing is
// listed until Discover.
func newUpstream(identity *rest.Config, u Config, m *metrics) (*Upstream, error) {
	c, err := newClient(identity, u)
	if err != nil {
		return nil, err
	}
	up := &Upstream{cfg: u, client: c, metrics: m}
	up.list.Store(&listing{})
	for _, g := range []string{GroupCustom, GroupExternal} {
		if u.Serves(g) {
			m.up.WithLabelValues(u.Name, g).Set(0)
		}
	}
	return up, nil
}

// Discover lists the upstream's metrics of each group it serves. A group whose
// discovery fails keeps its last good list; the error names the groups.
func (u *Upstream) Discover(ctx context.Context) error {
	old := u.list.Load()
	next := &listing{custom: old.custom, external: old.external}
	var errs []error
	if u.cfg.Serves(GroupCustom) {
		infos, err := u.listCustom(ctx)
		if u.record(GroupCustom, err, len(infos)) {
			next.custom = infos
		} else {
			errs = append(errs, fmt.Errorf("%s: %w", GroupCustom, err))
		}
	}
	if u.cfg.Serves(GroupExternal) {
		names, err := u.listExternal(ctx)
		if u.record(GroupExternal, err, len(names)) {
			next.external = names
		} else {
			errs = append(errs, fmt.Errorf("%s: %w", GroupExternal, err))
		}
	}
	u.list.Store(next)
	if err := errors.Join(errs...); err != nil {
		klog.FromContext(ctx).Info("Upstream discovery failed; its last good metrics stay listed", "upstream", u.cfg.Name, "err", err)
		return err
	}
	return nil
}

// record sets the self-metrics of one group's discovery; true on success.
func (u *Upstream) record(group string, err error, n int) bool {
	if err != nil {
		u.metrics.up.WithLabelValues(u.cfg.Name, group).Set(0)
		u.metrics.relists.WithLabelValues(u.cfg.Name, group, "error").Inc()
		return false
	}
	u.metrics.up.WithLabelValues(u.cfg.Name, group).Set(1)
	u.metrics.listed.WithLabelValues(u.cfg.Name, group).Set(float64(n))
	u.metrics.relists.WithLabelValues(u.cfg.Name, group, "success").Inc()
	return true
}

// resources reads the discovery document of group/version.
func (u *Upstream) resources(ctx context.Context, group, version string) ([]metav1.APIResource, error) {
	body, err := u.client.get(ctx, "/apis/"+group+"/"+version, nil)
	if err != nil {
		return nil, err
	}
	var l metav1.APIResourceList
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("%w: %w", errGarbage, err)
	}
	if l.Kind != "APIResourceList" || l.GroupVersion != group+"/"+version {
		return nil, fmt.Errorf("%w: kind %q, groupVersion %q", errGarbage, l.Kind, l.GroupVersion)
	}
	if len(l.APIResources) > MaxListed {
		return nil, fmt.Errorf("%d metrics listed, more than %d", len(l.APIResources), MaxListed)
	}
	return l.APIResources, nil
}

// listCustom lists the custom metrics: custom-metrics-apiserver names each
// RESOURCE/METRIC, the resource qualified by its group (deployments.apps).
func (u *Upstream) listCustom(ctx context.Context) (map[provider.CustomMetricInfo]bool, error) {
	res, err := u.resources(ctx, GroupCustom, customVersion)
	if err != nil {
		return nil, err
	}
	out := make(map[provider.CustomMetricInfo]bool, len(res))
	for _, r := range res {
		resource, metric, ok := strings.Cut(r.Name, "/")
		if !ok || resource == "" || metric == "" {
			return nil, fmt.Errorf("%w: custom metric %q is not RESOURCE/METRIC", errGarbage, shorten(r.Name))
		}
		out[provider.CustomMetricInfo{GroupResource: schema.ParseGroupResource(resource), Namespaced: r.Namespaced, Metric: metric}] = true
	}
	return out, nil
}

// listExternal lists the external metrics' names.
func (u *Upstream) listExternal(ctx context.Context) (map[string]bool, error) {
	res, err := u.resources(ctx, GroupExternal, externalVersion)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(res))
	for _, r := range res {
		if r.Name == "" {
			return nil, fmt.Errorf("%w: an external metric without name", errGarbage)
		}
		out[r.Name] = true
	}
	return out, nil
}

// shorten bounds a name quoted in an error.
func shorten(s string) string {
	const keep = 64
	if len(s) > keep {
		return strings.ToValidUTF8(s[:keep], "") + "..."
	}
	return s
}
