package rules

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	promlabels "github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// The history contract (docs/forecast.md#history-contract): a metrics-API
// request whose metric selector holds both reserved requirements
// history.ebbflow.dev/range=<duration> and history.ebbflow.dev/step=<duration>
// asks for the metric's recorded values over the last range, one point per
// step, instead of its current value. The adapter removes them from the
// selector, renders the rule's metricsQuery as usual and evaluates it as the
// subquery (<query>)[range:step].
const (
	HistoryRangeLabel = "history.ebbflow.dev/range"
	HistoryStepLabel  = "history.ebbflow.dev/step"
	// historyPrefix is reserved: any other key under it is an error.
	historyPrefix = "history.ebbflow.dev/"
)

// Bounds of a history request.
const (
	// MaxHistoryRange is the longest history: five weeks (four weekly seasons
	// and the lead).
	MaxHistoryRange = 35 * 24 * time.Hour
	// MinHistoryStep is the shortest step.
	MinHistoryStep = 30 * time.Second
	// MaxHistoryPoints bounds range/step: Prometheus' own limit of points
	// per series for a range query.
	MaxHistoryPoints = 11_000
	// MaxHistorySamples bounds series × points of one answer.
	MaxHistorySamples = 110_000
	// maxHistoryValue is the longest reserved value read (a duration such as
	// "4d1h" is a handful of bytes).
	maxHistoryValue = 16
)

// HistoryRequest is a request through the history contract: the range and step of the subquery, and
// for a Pods metric the workload whose pods it sums.
type HistoryRequest struct {
	Range time.Duration
	Step  time.Duration
	// Pods is set by one of the History*PodsLabel requirements: the
	// history of a Pods metric (PodsHistoryQuery); zero otherwise.
	Pods WorkloadPods
}

// Points is how many points per series the request asks at most.
func (h HistoryRequest) Points() int64 { return int64(h.Range/h.Step) + 1 }

// Values are the label values of the reserved requirements asking for h
// (Prometheus duration syntax, valid label values).
func (h HistoryRequest) Values() (rangeValue, stepValue string) {
	return model.Duration(h.Range).String(), model.Duration(h.Step).String()
}

// historyDurationRE is the duration syntax accepted: Prometheus units in
// decreasing order, digits only, nothing else.
var historyDurationRE = regexp.MustCompile(`^([0-9]+y)?([0-9]+w)?([0-9]+d)?([0-9]+h)?([0-9]+m)?([0-9]+s)?([0-9]+ms)?$`)

// ErrBadHistory wraps every invalid history request; it also wraps
// ErrBadSelector so that the provider answers 400.
var ErrBadHistory = fmt.Errorf("%w: bad history request", ErrBadSelector)

func badHistory(key, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrBadHistory, key, fmt.Sprintf(format, args...))
}

// AsksHistory reports whether sel holds a requirement under the reserved
// history.ebbflow.dev/ prefix: the request is for a history (or is refused
// with a 400 by SplitHistory's checks). It only reads the keys.
func AsksHistory(sel labels.Selector) bool {
	if sel == nil {
		return false
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if strings.HasPrefix(r.Key(), historyPrefix) {
			return true
		}
	}
	return false
}

// SplitHistory removes the reserved history requirements from sel. It
// returns the rest of the selector, and the request when sel asks for a
// history (nil otherwise). Both requirements must be present with the
// operator = (or ==) and one value in Prometheus duration syntax within the
// bounds; for a Pods metric one of the History*PodsLabel requirements
// names the workload (History.Pods); any other key under
// history.ebbflow.dev/ is an error. Errors wrap
// ErrBadHistory and name the requirement.
func SplitHistory(sel labels.Selector) (labels.Selector, *HistoryRequest, error) {
	if sel == nil {
		return sel, nil, nil
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return sel, nil, nil
	}
	var rest []labels.Requirement
	var rangeV, stepV *time.Duration
	var pods WorkloadPods
	for _, r := range reqs {
		key := r.Key()
		if len(key) < len(historyPrefix) || key[:len(historyPrefix)] != historyPrefix {
			rest = append(rest, r)
			continue
		}
		if isPodsKey(key) {
			if !pods.IsZero() {
				return nil, nil, badHistory(key, "a Pods metric's history names one workload (%s was given too)", pods.Shape)
			}
			w, err := parseWorkloadPods(r)
			if err != nil {
				return nil, nil, badHistory(key, "%v", err)
			}
			pods = w
			continue
		}
		var dst **time.Duration
		switch key {
		case HistoryRangeLabel:
			dst = &rangeV
		case HistoryStepLabel:
			dst = &stepV
		default:
			return nil, nil, badHistory(truncate(key), "unknown reserved requirement (only %s, %s and, for a Pods metric, one of %s, %s, %s)",
				HistoryRangeLabel, HistoryStepLabel, HistoryDeploymentPodsLabel, HistoryStatefulSetPodsLabel, HistoryReplicaSetPodsLabel)
		}
		if *dst != nil {
			return nil, nil, badHistory(key, "given twice")
		}
		d, err := historyValue(r)
		if err != nil {
			return nil, nil, badHistory(key, "%v", err)
		}
		*dst = &d
	}
	if rangeV == nil && stepV == nil && pods.IsZero() {
		return sel, nil, nil
	}
	if rangeV == nil || stepV == nil {
		return nil, nil, badHistory(HistoryRangeLabel, "a history needs both %s and %s", HistoryRangeLabel, HistoryStepLabel)
	}
	h := HistoryRequest{Range: *rangeV, Step: *stepV, Pods: pods}
	if err := h.Validate(); err != nil {
		return nil, nil, err
	}
	return labels.NewSelector().Add(rest...), &h, nil
}

// Validate checks h's bounds; errors wrap ErrBadHistory and name the
// requirement.
func (h HistoryRequest) Validate() error {
	switch {
	case h.Step < MinHistoryStep:
		return badHistory(HistoryStepLabel, "%v is shorter than %v", model.Duration(h.Step), model.Duration(MinHistoryStep))
	case h.Range < h.Step:
		return badHistory(HistoryRangeLabel, "%v is shorter than the step %v", model.Duration(h.Range), model.Duration(h.Step))
	case h.Range > MaxHistoryRange:
		return badHistory(HistoryRangeLabel, "%v is longer than %v", model.Duration(h.Range), model.Duration(MaxHistoryRange))
	case h.Points() > MaxHistoryPoints:
		return badHistory(HistoryStepLabel, "%v over %v is %d points per series, more than %d", model.Duration(h.Step), model.Duration(h.Range), h.Points(), MaxHistoryPoints)
	}
	return nil
}

// historyValue is a reserved requirement's duration: operator = or ==, one
// value, duration syntax only.
func historyValue(r labels.Requirement) (time.Duration, error) {
	if op := r.Operator(); op != selection.Equals && op != selection.DoubleEquals && op != selection.In {
		return 0, fmt.Errorf("operator %q: only = is accepted", op)
	}
	vals := r.Values().UnsortedList()
	if len(vals) != 1 {
		return 0, fmt.Errorf("%d values: exactly one is accepted", len(vals))
	}
	return ParseHistoryDuration(vals[0])
}

// ParseHistoryDuration parses a reserved value: a non-zero Prometheus
// duration (e.g. 7d, 1h30m, 30s), at most 16 bytes, nothing else.
func ParseHistoryDuration(v string) (time.Duration, error) {
	if len(v) > maxHistoryValue {
		return 0, fmt.Errorf("value of %d bytes is not a duration (at most %d)", len(v), maxHistoryValue)
	}
	if v == "" || !historyDurationRE.MatchString(v) {
		return 0, fmt.Errorf("value %q is not a duration such as 7d, 1h30m or 30s", v)
	}
	d, err := model.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("value %q is not a positive duration", v)
	}
	return time.Duration(d), nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Subquery wraps a rendered query as the subquery (<query>)[range:step],
// built on the parsed query's syntax tree: the rendered query is parsed
// first (a query that does not parse is an error), so the subquery has
// exactly the structure of the rule's query with a range applied to the
// whole of it, whatever the selector's values were.
func (h HistoryRequest) Subquery(query string) (string, error) {
	if err := h.Validate(); err != nil {
		return "", err
	}
	expr, err := instantExpr(query)
	if err != nil {
		return "", err
	}
	return h.subquery(expr), nil
}

// instantExpr parses a rendered query that must be an instant vector; a
// scalar becomes vector(<scalar>).
func instantExpr(query string) (parser.Expr, error) {
	expr, err := rulefile.ParsePromQL(query)
	if err != nil {
		return nil, fmt.Errorf("rendered query does not parse: %w", err)
	}
	if expr.Type() != parser.ValueTypeVector && expr.Type() != parser.ValueTypeScalar {
		return nil, errors.New("rendered query is not an instant vector")
	}
	if expr.Type() == parser.ValueTypeScalar {
		expr = &parser.Call{Func: parser.Functions["vector"], Args: parser.Expressions{expr}}
	}
	return expr, nil
}

// subquery is (<expr>)[range:step] built on the tree.
func (h HistoryRequest) subquery(expr parser.Expr) string {
	sq := &parser.SubqueryExpr{Expr: &parser.ParenExpr{Expr: expr}, Range: h.Range, Step: h.Step}
	return sq.String()
}

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
func parseWorkloadPods(r labels.Requirement) (WorkloadPods, error) {
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
			case m.Name == resLabel && m.Type == promlabels.MatchRegexp && m.Value == pattern:
				pods = true
			case m.Name == nsLabel && m.Type == promlabels.MatchEqual && m.Value == namespace:
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
func (r *Rule) PodsHistoryQuery(req CustomRequest, h HistoryRequest) (string, error) {
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
	promql, err := r.renderGrouped(req.Series, set, resLabel)
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
