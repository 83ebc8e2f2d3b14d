// Package rules compiles prometheus-adapter discovery rules into immutable Rules that
// name metrics after Prometheus series, map series labels to Kubernetes group-resources
// and back, and render a request into PromQL through the rule's metricsQuery template.
//
// The package is pure: it talks to no network and keeps no package-level mutable state.
// The only collaborator is a meta.RESTMapper, consulted to normalise resources.
//
// # Safety of rendered PromQL
//
// Everything a caller passes in from an API request (namespace, object names, metric
// label selector values) ends up inside PromQL double-quoted strings, quoted with
// strconv.Quote. Go's quoting emits only escapes that the PromQL lexer accepts
// (\a \b \f \n \r \t \v \\ \" \xNN \uNNNN \UNNNNNNNN), never a raw newline, quote or
// invalid UTF-8, and PromQL unquotes string literals by Go's rules, so every value
// reaches Prometheus byte for byte and can never end its string early.
// LabelValuesByName, whose values a template puts between quotes of its own, holds the
// same escaping without the quotes, and ' written as \x27, so it is safe inside "..."
// and '...' (nothing is safe inside a raw `...` string).
//
// Label names from a selector are not quoted in PromQL, so they must match the
// Prometheus label-name grammar [a-zA-Z_][a-zA-Z0-9_]* or the request fails with
// ErrBadSelector. Label names produced by a rule (overrides and the resources template)
// are checked against the same grammar, and series names against the metric-name
// grammar.
package rules
