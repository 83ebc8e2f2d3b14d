package source

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	adapterprovider "github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// ResourceWindow is resourceRules.window: the window metrics.k8s.io reports
// with every sample; 0 when the rule file has no resourceRules.
func (r *Reader) ResourceWindow() time.Duration {
	if r.opts.Rules.Resource == nil {
		return 0
	}
	return r.opts.Rules.Resource.Window
}

// readResource sums, per step, the usage of resource over the target's pods
// as metrics.k8s.io would have served it through resourceRules: the
// containerQuery rendered by the adapter's own code for every pod of the
// namespace (pod!="", as the adapter asks for many pods), grouped by pod and
// container; per pod the sum of its containers (only container, when set:
// ContainerResource), as the controller sums them.
func (r *Reader) readResource(ctx context.Context, name corev1.ResourceName, container string, q Query, out []int64) error {
	resourceRules := r.opts.Rules.Resource
	if resourceRules == nil {
		return errors.New("the rule file has no resourceRules, which serve cpu and memory")
	}
	var rule rules.ResourceRule
	switch name {
	case corev1.ResourceCPU:
		rule = resourceRules.CPU
	case corev1.ResourceMemory:
		rule = resourceRules.Memory
	default:
		return fmt.Errorf("resourceRules serve cpu and memory, not %s", name)
	}
	query, err := rule.Container.Render(rules.ResourceRequest{
		Resource: podsResource, Namespace: q.Namespace, ExtraGroupBy: []string{rule.ContainerLabel},
	})
	if err != nil {
		return fmt.Errorf("resourceRules.%s.containerQuery: %w", name, err)
	}
	podLabel, err := rule.Container.LabelForResource(podsResource)
	if err != nil {
		return fmt.Errorf("resourceRules.%s: %w", name, err)
	}
	nsLabel, _ := rule.Container.LabelForResource(namespacesResource)
	owner := map[[2]string]int{}
	return r.rangeQuery(ctx, rule.Backend, query, func(series int, lbls map[string]string, i int, v float64) {
		pod, c := lbls[podLabel], lbls[rule.ContainerLabel]
		switch {
		case pod == "" || c == "" || (container != "" && c != container):
			return
		case nsLabel != "" && lbls[nsLabel] != "" && lbls[nsLabel] != q.Namespace:
			return
		case q.PodNames != nil && !q.PodNames.MatchString(pod):
			return
		}
		key := [2]string{pod, c}
		if first, ok := owner[key]; ok && first != series {
			return // the adapter serves the first sample of a container
		}
		owner[key] = series
		m, ok := adapterprovider.ResourceMilliValue(name, model.SampleValue(v))
		if !ok {
			return
		}
		addMilli(out, i, m)
	})
}

// addMilli adds m milli-units to step i, saturating.
func addMilli(out []int64, i int, m int64) {
	if out[i] == simulate.Missing {
		out[i] = 0
	}
	if out[i] > 0 && m > math.MaxInt64-out[i] {
		out[i] = math.MaxInt64
		return
	}
	out[i] += m
}
