package rules

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// A Pods metric's history (docs/forecast.md#history-contract) is the total
// of the workload's pods over time, including pods that no longer exist.
// Prometheus' series carry the pod's name, not its labels, so past pods are
// selected by the shape of the names their workload controller gives them:
// one of these reserved requirements names the workload and the shape.
const (
	// HistoryDeploymentPodsLabel selects the pods of the ReplicaSets of a
	// Deployment (or of any workload naming its ReplicaSets as a Deployment
	// does): NAME-<pod-template-hash>-<5 random characters>.
	HistoryDeploymentPodsLabel = historyPrefix + "deployment-pods"
	// HistoryStatefulSetPodsLabel selects the pods of a StatefulSet:
	// NAME-<ordinal>.
	HistoryStatefulSetPodsLabel = historyPrefix + "statefulset-pods"
	// HistoryReplicaSetPodsLabel selects the pods of a ReplicaSet:
	// NAME-<5 random characters>.
	HistoryReplicaSetPodsLabel = historyPrefix + "replicaset-pods"
)

// podNameChars is the alphabet Kubernetes draws generated name suffixes and
// pod-template hashes from (k8s.io/apimachinery/pkg/util/rand): no vowels,
// no 0, 1 or 3, so a suffix is never a word of a workload's own name.
const podNameChars = "[bcdfghjklmnpqrstvwxz2456789]"

// podNameSuffixes are the strict suffixes of each shape, after NAME and a
// dash. Prometheus anchors regular expressions at both ends.
var podNameSuffixes = map[string]string{
	HistoryDeploymentPodsLabel:  podNameChars + "{1,10}-" + podNameChars + "{5}",
	HistoryStatefulSetPodsLabel: "(0|[1-9][0-9]{0,9})",
	HistoryReplicaSetPodsLabel:  podNameChars + "{5}",
}

// workloadNameRE is the workload name accepted: a DNS subdomain as
// Kubernetes names workloads, at most 63 bytes (a label value's bound).
var workloadNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$`)

// WorkloadPods names the pods a Pods metric's history sums: the pods of the
// workload Name, by the shape of names Shape (one of the History*PodsLabel
// keys). The zero value names none: the history is not a Pods metric's.
type WorkloadPods struct {
	Shape string
	Name  string
}

// IsZero reports whether w names no pods.
func (w WorkloadPods) IsZero() bool { return w == WorkloadPods{} }

// Pattern is the regular expression matching exactly the names of w's
// pods: the escaped name, a dash and the shape's strict suffix.
func (w WorkloadPods) Pattern() string {
	return regexp.QuoteMeta(w.Name) + "-" + podNameSuffixes[w.Shape]
}

// Kind is the workload's kind, by its shape.
func (w WorkloadPods) Kind() string {
	switch w.Shape {
	case HistoryDeploymentPodsLabel:
		return "Deployment"
	case HistoryStatefulSetPodsLabel:
		return "StatefulSet"
	}
	return "ReplicaSet"
}

// parseWorkloadPods reads one of the pods requirements: operator = and
// one workload name.
func parseWorkloadPods(r k8slabels.Requirement) (WorkloadPods, error) {
	if op := r.Operator(); op != selection.Equals && op != selection.DoubleEquals && op != selection.In {
		return WorkloadPods{}, fmt.Errorf("operator %q: only = is accepted", op)
	}
	vals := r.Values().UnsortedList()
	if len(vals) != 1 {
		return WorkloadPods{}, fmt.Errorf("%d values: exactly one is accepted", len(vals))
	}
	v := vals[0]
	if len(v) > 63 {
		return WorkloadPods{}, fmt.Errorf("value of %d bytes is not a workload name (at most 63)", len(v))
	}
	if !workloadNameRE.MatchString(v) {
		return WorkloadPods{}, fmt.Errorf("value %q is not a workload name (lower-case letters, digits, - and .)", v)
	}
	return WorkloadPods{Shape: r.Key(), Name: v}, nil
}

// isPodsKey reports whether key is one of the pods requirements.
func isPodsKey(key string) bool {
	_, ok := podNameSuffixes[key]
	return ok
}

// podsGroupResourceMatcher matches the resource label with w's pattern.
func podsGroupResourceMatcher(label string, w WorkloadPods) matcher {
	return matcher{name: label, op: "=~", value: w.Pattern()}
}

// checkSelectsPods verifies that the rendered query selects the workload's
// pods: at least one of its series selectors matches the resource label
// with the pattern and, when namespace is not "", the namespaces label with
// the namespace. A rule whose query ignores the request's matchers would
// otherwise sum every pod's series.
func checkSelectsPods(expr parser.Expr, resLabel, pattern, nsLabel, namespace string) error {
	found := false
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok || found {
			return nil
		}
		var pods, ns bool
		for _, m := range vs.LabelMatchers {
			switch {
			case m.Name == resLabel && m.Type == labels.MatchRegexp && m.Value == pattern:
				pods = true
			case m.Name == nsLabel && m.Type == labels.MatchEqual && m.Value == namespace:
				ns = true
			}
		}
		found = pods && (ns || namespace == "")
		return nil
	})
	if !found {
		return fmt.Errorf("the rule's metricsQuery does not select %s=~%q and %s=%q in one series selector (<<.LabelMatchers>>): it cannot answer a Pods metric's history", resLabel, pattern, nsLabel, namespace)
	}
	return nil
}

// PodsHistoryQuery renders the query of a Pods metric's history h for the
// pods of h.Pods in req.Namespace: the rule's metricsQuery rendered as for
// every pod of the namespace with the rest of the selector, the resource
// label matched by h.Pods.Pattern() instead of today's names (in
// LabelMatchers and in LabelValuesByName), parsed, checked to select those
// pods, summed, and wrapped in the syntax tree as the subquery
// (sum(<query>))[range:step]: one series, the workload's total at each
// point, whatever the number of pods. req.Names must be empty and
// req.Resource pods. Selector errors wrap ErrBadSelector.
func (r *Rule) PodsHistoryQuery(req CustomRequest, h History) (string, error) {
	if h.Pods.IsZero() {
		return "", errors.New("not a Pods metric's history")
	}
	if req.Resource != podsGroupResource || len(req.Names) > 0 || req.Namespace == "" {
		return "", fmt.Errorf("a Pods metric's history is asked for the pods of a namespace, not %s %v in %q", req.Resource, req.Names, req.Namespace)
	}
	if err := h.Validate(); err != nil {
		return "", err
	}
	if !metricNameRE.MatchString(req.Series) {
		return "", fmt.Errorf("series %q is not a Prometheus metric name", req.Series)
	}
	reqs, err := selectorRequirements(req.MetricSelector)
	if err != nil {
		return "", err
	}
	set := newMatcherSet()
	if err := set.addRequirements(reqs); err != nil {
		return "", err
	}
	nsLabel, err := r.res.labelFor(namespacesGR)
	if err != nil {
		return "", err
	}
	set.add(matcher{name: nsLabel, op: "=", value: req.Namespace}, req.Namespace)
	resLabel, err := r.res.labelFor(req.Resource)
	if err != nil {
		return "", err
	}
	pattern := h.Pods.Pattern()
	set.add(podsGroupResourceMatcher(resLabel, h.Pods), pattern)
	promql, err := r.render(queryArgs{
		Series:            req.Series,
		LabelMatchers:     strings.Join(set.exprs, ","),
		LabelValuesByName: set.values,
		GroupBy:           resLabel,
		GroupBySlice:      []string{resLabel},
	})
	if err != nil {
		return "", err
	}
	expr, err := instantExpr(promql)
	if err != nil {
		return "", err
	}
	if err := checkSelectsPods(expr, resLabel, pattern, nsLabel, req.Namespace); err != nil {
		return "", err
	}
	sum := &parser.AggregateExpr{Op: parser.SUM, Expr: expr}
	return h.subquery(sum), nil
}
