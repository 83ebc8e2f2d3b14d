// Package rulefile holds the rule-file types of ebbflow-adapter, which are those of
// prometheus-adapter, read unchanged, together with a strict loader and validation.
//
// The usual sequence is Load, which rejects unknown keys and values of
// the wrong type with their positions; Validate, which rejects rules that cannot work;
// and Warnings, which lists findings that are accepted but suspicious. Each reports
// every problem at once, one FieldError per problem.
//
// Everything in this package is pure: no network, no clients. Callers that need a
// cluster's view of resources pass a RESTMapper; DefaultRESTMapper knows the built-in
// resources without a cluster.
package rulefile

import "github.com/prometheus/common/model"

// File is the whole rule file.
type File struct {
	// Rules produce custom metrics (custom.metrics.k8s.io).
	Rules []DiscoveryRule `yaml:"rules"`
	// ExternalRules produce external metrics (external.metrics.k8s.io).
	ExternalRules []DiscoveryRule `yaml:"externalRules"`
	// ResourceRules produce resource metrics (metrics.k8s.io); nil means not served.
	ResourceRules *ResourceRules `yaml:"resourceRules"`

	// loadWarnings are what Load read past, as prometheus-adapter does, and that
	// Warnings reports: YAML documents after the first, null keys of a mapping.
	loadWarnings []FieldError
}

// DiscoveryRule says how series found in Prometheus become metrics and how a request
// for one of those metrics becomes a PromQL query.
type DiscoveryRule struct {
	// SeriesQuery is a Prometheus series selector sent as match[] during discovery.
	SeriesQuery string `yaml:"seriesQuery"`
	// SeriesFilters further restrict discovered series by name; all must hold.
	SeriesFilters []RegexFilter `yaml:"seriesFilters"`
	// Resources maps series labels to Kubernetes resources.
	Resources ResourceMapping `yaml:"resources"`
	// Name maps a series name to the metric name served by the API.
	Name NameMapping `yaml:"name"`
	// MetricsQuery is a text/template (delimiters << >>) rendering the PromQL of a
	// request, with fields .Series, .LabelMatchers, .LabelValuesByName, .GroupBy and
	// .GroupBySlice.
	MetricsQuery string `yaml:"metricsQuery"`
	// NaNValues (an ebbflow extension) says what a NaN sample of this rule becomes:
	// NaNZero serves 0 (prometheus-adapter's behaviour), NaNDrop serves no sample.
	// Empty means the adapter's --nan-values.
	NaNValues string `yaml:"nanValues"`
	// Backend (an ebbflow extension) names the Prometheus backend the rule's series
	// are discovered in and its queries sent to (see BackendsFile). Empty or
	// DefaultBackend means the backend of --prometheus-url.
	Backend string `yaml:"backend"`
}

// What a NaN sample becomes (DiscoveryRule.NaNValues, --nan-values).
const (
	// NaNZero serves a NaN sample as 0, as prometheus-adapter does.
	NaNZero = "zero"
	// NaNDrop leaves a NaN sample out of the answer, as if Prometheus had not
	// returned it.
	NaNDrop = "drop"
)

// RegexFilter keeps (Is) or drops (IsNot) series whose name matches; exactly one is set.
// The expressions are RE2, unanchored, matched against the series name only.
type RegexFilter struct {
	Is    string `yaml:"is"`
	IsNot string `yaml:"isNot"`
}

// ResourceMapping maps Prometheus labels to Kubernetes group-resources.
type ResourceMapping struct {
	// Template (<<.Group>>, <<.Resource>>) turns a group-resource into a label name; it
	// must use .Resource. The group has dots and dashes replaced by underscores and the
	// resource is singular, e.g. "kube_<<.Group>>_<<.Resource>>" gives kube_apps_deployment.
	Template string `yaml:"template"`
	// Overrides maps a label name to a group-resource explicitly. Resources are
	// resolved through a RESTMapper (see GroupResource.Normalize). Template and
	// overrides combine.
	Overrides map[string]GroupResource `yaml:"overrides"`
	// Namespaced, for external rules only, says whether the request's namespace is
	// added to the query. Unset means true.
	Namespaced *bool `yaml:"namespaced"`
}

// GroupResource names a Kubernetes resource as the user wrote it: Resource may be
// singular or plural; Group is empty for the core group (an empty group matches any
// group when resolved). Use Normalize to get the served group-resource.
type GroupResource struct {
	Group    string `yaml:"group"`
	Resource string `yaml:"resource"`
}

// NameMapping turns a series name into a metric name.
type NameMapping struct {
	// Matches is an RE2 expression applied to the series name; empty means ".*". It
	// also acts as an implicit `is` series filter.
	Matches string `yaml:"matches"`
	// As is the metric name, expanded with regexp.Regexp.ExpandString against the
	// match of Matches: $1 or ${1} for a numbered group, $name or ${name} for a named
	// one, $$ for a dollar. A name is the longest run of letters, digits and
	// underscores, so write ${1}_total, not $1_total.
	//
	// Empty As defaults to "$0" (the whole series name) when Matches has no capture
	// group and to "$1" when it has exactly one; with more groups it must be set.
	// Validate rejects references to groups Matches does not have.
	As string `yaml:"as"`
}

// ResourceRules configure metrics.k8s.io (cpu and memory). Both rules are required.
type ResourceRules struct {
	CPU    ResourceRule `yaml:"cpu"`
	Memory ResourceRule `yaml:"memory"`
	// Window is the Prometheus duration (e.g. "5m") reported as the window of every
	// result; it should match the range the queries use. It must be positive.
	Window model.Duration `yaml:"window"`
	// Backend (an ebbflow extension) names the Prometheus backend both resources are
	// queried in, as DiscoveryRule.Backend.
	Backend string `yaml:"backend"`
}

// ResourceRule configures one resource of metrics.k8s.io.
type ResourceRule struct {
	// ContainerQuery is a query template (as DiscoveryRule.MetricsQuery) giving one
	// sample per container of the requested pods; it is grouped by the pod label and
	// ContainerLabel.
	ContainerQuery string `yaml:"containerQuery"`
	// NodeQuery is a query template giving one sample per requested node.
	NodeQuery string `yaml:"nodeQuery"`
	// Resources maps labels to pods, nodes and namespaces.
	Resources ResourceMapping `yaml:"resources"`
	// ContainerLabel is the label holding the container name, e.g. "container".
	ContainerLabel string `yaml:"containerLabel"`
}
