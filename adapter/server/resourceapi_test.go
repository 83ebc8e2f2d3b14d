package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

const resourceRulesTemplate = `
resourceRules:
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[2m]))'
    nodeQuery: 'sum by (<<.GroupBy>>) (rate(node_cpu_usage_seconds_total{<<.LabelMatchers>>}[2m]))'
    resources: {template: "<<.Resource>>"}
    containerLabel: container
  memory:
    containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>})'
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>})'
    resources: {template: "<<.Resource>>"}
    containerLabel: container
  window: WINDOW
`

type recordingSetter struct{ got []*rules.ResourceRules }

func (s *recordingSetter) SetRules(r *rules.ResourceRules) { s.got = append(s.got, r) }

func TestReloadReplacesResourceRules(t *testing.T) {
	mapper := rulefile.DefaultRESTMapper()
	reg := prometheus.NewRegistry()
	disc, err := discovery.New(discovery.Options{Client: &promfake.Client{}, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	window := func(w string) string {
		return clusterQueue(t) + replaceWindow(w)
	}
	r, err := newReloader(path, "initial", rules.Options{Mapper: mapper}, disc, reg)
	if err != nil {
		t.Fatal(err)
	}
	setter := &recordingSetter{}
	r.resource = setter
	ctx := context.Background()

	write(window("2m"))
	if !r.check(ctx) || len(setter.got) != 1 || setter.got[0] == nil || setter.got[0].Window != 2*time.Minute {
		t.Fatalf("first file: %+v", setter.got)
	}
	write(window("5 minutes")) // invalid: not a duration
	if r.check(ctx) || len(setter.got) != 1 {
		t.Fatalf("invalid file reached the provider: %+v", setter.got)
	}
	write(window("5m"))
	if !r.check(ctx) || len(setter.got) != 2 || setter.got[1].Window != 5*time.Minute {
		t.Fatalf("new window not applied: %+v", setter.got)
	}
	write(clusterQueue(t)) // resourceRules removed
	if !r.check(ctx) || len(setter.got) != 3 || setter.got[2] != nil {
		t.Fatalf("removal not applied: %+v", setter.got)
	}
}

func replaceWindow(w string) string {
	out := []byte(resourceRulesTemplate)
	i := len(out) - len("WINDOW\n")
	return string(out[:i]) + w + "\n"
}

func TestStripNodeKeepsWhatSelectorsRead(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}, Annotations: map[string]string{"big": "x"}},
		Status:     corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"img"}}}},
	}
	got, err := stripNode(n)
	if err != nil {
		t.Fatal(err)
	}
	s := got.(*corev1.Node)
	if s.Name != "n1" || s.Labels["zone"] != "a" || len(s.Annotations) != 0 || len(s.Status.Images) != 0 {
		t.Errorf("stripped node = %+v", s)
	}
}
