package resourcerules

import (
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// TestRules: the rules, under resourceRules, are a rule file the adapter
// loads, with the window and the matchers asked for.
func TestRules(t *testing.T) {
	cfg, err := rulefile.Load([]byte("resourceRules:\n" + Rules(45*time.Second, 2, `container!="",pod!=""`, `metrics_path="/metrics/resource"`)))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.ResourceRules
	if r == nil {
		t.Fatal("no resourceRules")
	}
	if got := time.Duration(r.Window); got != 45*time.Second {
		t.Errorf("window %v, want 45s", got)
	}
	if want := `sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!="",pod!=""}[45s]))`; r.CPU.ContainerQuery != want {
		t.Errorf("cpu.containerQuery %q, want %q", r.CPU.ContainerQuery, want)
	}
	if want := `sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>,metrics_path="/metrics/resource"})`; r.Memory.NodeQuery != want {
		t.Errorf("memory.nodeQuery %q, want %q", r.Memory.NodeQuery, want)
	}
	if r.CPU.ContainerLabel != "container" || r.Memory.ContainerLabel != "container" {
		t.Errorf("containerLabel %q, %q; want container", r.CPU.ContainerLabel, r.Memory.ContainerLabel)
	}
}
