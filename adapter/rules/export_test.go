package rules

// ExternalNamespaced reports whether external requests add the namespace matcher
// (resources.namespaced, default true). It is meaningful for External rules only.
func (r *Rule) ExternalNamespaced() bool { return r.externalNamespaced }
