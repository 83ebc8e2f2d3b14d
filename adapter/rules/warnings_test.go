package rules

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

func TestWarningsMetric(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewWarningsMetric(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Set(klog.Background(), []rulefile.FieldError{
		{Rule: "rules[0]", Field: "name.as", Message: "a"},
		{Rule: "rules[3]", Field: "name.as", Message: "b"},
		{Field: `rules[0].resources.overrides["x.y"]`, Line: 4, Message: "c"},
		{Line: 9, Message: "d"},
	})
	want := `# HELP ebbflow_adapter_config_rule_warnings Warnings of the rule file in service (accepted, but almost certainly not what was meant), by field; the log names each rule.
# TYPE ebbflow_adapter_config_rule_warnings gauge
ebbflow_adapter_config_rule_warnings{field="document"} 1
ebbflow_adapter_config_rule_warnings{field="name.as"} 2
ebbflow_adapter_config_rule_warnings{field="rules.resources.overrides"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	m.Set(klog.Background(), nil) // a reload to a file without warnings
	if n := testutil.CollectAndCount(m.gauge); n != 0 {
		t.Errorf("%d series after a file without warnings, want 0", n)
	}
}
