package discovery

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

// collector accumulates what a stream of series says about a set of rules. It keeps,
// per rule and series name, the distinct label-name sets seen; each distinct set is
// stored once (interned), so a million series of the same shape cost one entry.
type collector struct {
	rules  []*rules.Rule
	sets   map[string]*labelSet       // interned label-name sets by joined key
	seen   map[int]map[string]setKeys // rule position -> series name -> sets
	series int
	keyBuf []byte
	names  map[nameKey]bool // memo of rules[rule].MetricName(series) matching
}

type nameKey struct {
	rule   int
	series string
}

type labelSet struct {
	key   string
	names []string
}

type setKeys map[string]struct{}

func newCollector(rules []*rules.Rule) *collector {
	return &collector{rules: rules, sets: map[string]*labelSet{}, seen: map[int]map[string]setKeys{}, names: map[nameKey]bool{}}
}

// add records one series seen for the rules at positions idx (all sharing the
// series query that produced it).
func (c *collector) add(idx []int, name string, labelNames []string) {
	c.series++
	var setKey string
	for _, i := range idx {
		ok, known := c.names[nameKey{i, name}]
		if !known {
			_, ok = c.rules[i].MetricName(name)
			c.names[nameKey{i, name}] = ok
		}
		if !ok {
			continue
		}
		if setKey == "" {
			setKey = c.intern(labelNames)
		}
		bySeries := c.seen[i]
		if bySeries == nil {
			bySeries = map[string]setKeys{}
			c.seen[i] = bySeries
		}
		keys := bySeries[name]
		if keys == nil {
			keys = setKeys{}
			bySeries[name] = keys
		}
		keys[setKey] = struct{}{}
	}
}

// intern returns the stored key for labelNames, storing a copy the first time. The
// lookup does not allocate.
func (c *collector) intern(labelNames []string) string {
	c.keyBuf = c.keyBuf[:0]
	for _, l := range labelNames {
		c.keyBuf = append(c.keyBuf, l...)
		c.keyBuf = append(c.keyBuf, ',')
	}
	if s, ok := c.sets[string(c.keyBuf)]; ok {
		return s.key
	}
	s := &labelSet{key: string(c.keyBuf), names: append([]string(nil), labelNames...)}
	c.sets[s.key] = s
	return s.key
}

// registry turns what was collected into a Registry. Rules are applied in order, so
// when two rules produce the same entry the later one wins.
func (c *collector) registry(scope Scoper) *Registry {
	reg := &Registry{custom: map[provider.CustomMetricInfo]Target{}, external: map[string]Target{}, series: c.series}
	for i, rule := range c.rules {
		bySeries := c.seen[i]
		for _, series := range slices.Sorted(maps.Keys(bySeries)) {
			keys := bySeries[series]
			metric, _ := rule.MetricName(series)
			target := Target{Rule: rule, Series: series}
			if rule.Kind() == rules.External {
				reg.external[metric] = target
				continue
			}
			for key := range keys {
				resources, namespaced := rule.Resources(c.sets[key].names)
				for _, gr := range resources {
					reg.custom[customInfo(gr, namespaced, metric, scope)] = target
				}
			}
		}
	}
	return reg
}

func customInfo(gr schema.GroupResource, namespaced bool, metric string, scope Scoper) provider.CustomMetricInfo {
	return provider.CustomMetricInfo{GroupResource: gr, Namespaced: namespaced && scope.Namespaced(gr), Metric: metric}
}
