package rules

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// WarningsMetric is the self-metric ebbflow_adapter_config_rule_warnings: the
// warnings (rulefile.Warnings) of the rule file in service, by field. It is what an
// alert watches for a file that prometheus-adapter would have served wrongly without
// a word.
type WarningsMetric struct {
	gauge *prometheus.GaugeVec
}

// NewWarningsMetric registers the metric with reg.
func NewWarningsMetric(reg prometheus.Registerer) (*WarningsMetric, error) {
	m := &WarningsMetric{gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "ebbflow_adapter", Subsystem: "config", Name: "rule_warnings",
		Help: "Warnings of the rule file in service (accepted, but almost certainly not what was meant), by field; the log names each rule.",
	}, []string{"field"})}
	if err := reg.Register(m.gauge); err != nil {
		return nil, err
	}
	return m, nil
}

// Set replaces the counts with those of warnings, the warnings of the file now in
// service, and logs each once, naming its rule and field.
func (m *WarningsMetric) Set(logger klog.Logger, warnings []rulefile.FieldError) {
	m.gauge.Reset()
	for _, w := range warnings {
		m.gauge.WithLabelValues(WarningField(w)).Inc()
		logger.Info("Rule file warning", "rule", w.Rule, "field", w.Field, "line", w.Line, "warning", w.Message)
	}
}

var listIndex = regexp.MustCompile(`\[[^]]*\]`)

// WarningField is the metric's field label of a warning: its field without list
// indices (name.as, rules.resources.overrides), or "document" for a finding on the
// whole file.
func WarningField(w rulefile.FieldError) string {
	if w.Field == "" {
		return "document"
	}
	return listIndex.ReplaceAllString(w.Field, "")
}
