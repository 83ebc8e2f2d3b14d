// Package config holds the rule-file types of ebbflow-adapter, which are those of
// prometheus-adapter, read unchanged, together with a strict loader and validation.
//
// Everything in this package is pure: no network, no clients. Callers that need a
// cluster's view of resources pass a RESTMapper.
package config

import "github.com/prometheus/common/model"

// Config is the whole rule file.
type Config struct {
	// Rules produce custom metrics (custom.metrics.k8s.io).
	Rules []DiscoveryRule `yaml:"rules"`
	// ExternalRules produce external metrics (external.metrics.k8s.io).
	ExternalRules []DiscoveryRule `yaml:"externalRules"`
	// ResourceRules produce resource metrics (metrics.k8s.io); nil means not served.
	ResourceRules *ResourceRules `yaml:"resourceRules"`
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
	// MetricsQuery is a text/template (delimiters << >>) rendering the PromQL of a request.
	MetricsQuery string `yaml:"metricsQuery"`
}

// RegexFilter keeps (Is) or drops (IsNot) series whose name matches; exactly one is set.
type RegexFilter struct {
	Is    string `yaml:"is"`
	IsNot string `yaml:"isNot"`
}

// ResourceMapping maps Prometheus labels to Kubernetes group-resources.
type ResourceMapping struct {
	// Template (<<.Group>>, <<.Resource>>) turns a group-resource into a label name.
	Template string `yaml:"template"`
	// Overrides maps a label name to a group-resource explicitly.
	Overrides map[string]GroupResource `yaml:"overrides"`
	// Namespaced, for external rules only, says whether the request's namespace is
	// added to the query. Unset means true.
	Namespaced *bool `yaml:"namespaced"`
}

// GroupResource names a Kubernetes resource; Group is empty for the core group.
type GroupResource struct {
	Group    string `yaml:"group"`
	Resource string `yaml:"resource"`
}

// NameMapping turns a series name into a metric name.
type NameMapping struct {
	// Matches is a regex applied to the series name; empty means ".*".
	Matches string `yaml:"matches"`
	// As is the expansion ($1, ${1}) giving the metric name; see ExpandAs.
	As string `yaml:"as"`
}

// ResourceRules configure metrics.k8s.io (cpu and memory).
type ResourceRules struct {
	CPU    ResourceRule   `yaml:"cpu"`
	Memory ResourceRule   `yaml:"memory"`
	Window model.Duration `yaml:"window"`
}

// ResourceRule configures one resource of metrics.k8s.io.
type ResourceRule struct {
	ContainerQuery string          `yaml:"containerQuery"`
	NodeQuery      string          `yaml:"nodeQuery"`
	Resources      ResourceMapping `yaml:"resources"`
	ContainerLabel string          `yaml:"containerLabel"`
}
