package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/prom"
	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
)

// clusterQueue is the shared rule file serving queue_messages_ready; rulesV2 renames it.
func clusterQueue(t *testing.T) string {
	return string(rulestest.Data(t, rulestest.ClusterQueue))
}

const rulesV2 = `
externalRules:
- seriesQuery: 'queue_messages_ready'
  resources: {namespaced: false}
  name: {as: "queue_depth"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
`

const rulesInvalid = `
externalRules:
- seriesQuery: 'queue_messages_ready'
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
  unknownKey: true
`

func TestReloadReplacesOnlyValidFiles(t *testing.T) {
	mapper := rulefile.DefaultRESTMapper()
	client := &promfake.Client{SeriesByMatch: map[string][]promfake.Series{
		"queue_messages_ready": {{Name: "queue_messages_ready", Labels: map[string]string{"queue": "a"}}},
	}}
	reg := prometheus.NewRegistry()
	disc, err := discovery.New(discovery.Options{Client: client, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(s string) {
		t.Helper()
		// Replace by rename, as a ConfigMap volume update does.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(clusterQueue(t))
	set, err := rules.ParseFileWith(path, rules.Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	disc.SetRules(set.Rules)
	ctx := context.Background()
	if err := disc.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := newReloader(path, set.Hash, rules.Options{Mapper: mapper}, disc, reg)
	if err != nil {
		t.Fatal(err)
	}
	serves := func(metric string) bool {
		_, ok := disc.Registry().External(metric)
		return ok
	}
	if r.check(ctx) {
		t.Fatal("unchanged file reloaded")
	}

	write(rulesInvalid)
	if r.check(ctx) {
		t.Fatal("invalid file put in service")
	}
	if !serves("queue_messages_ready") || testutil.ToFloat64(r.lastOK) != 0 || testutil.ToFloat64(r.reloads.WithLabelValues("failure")) != 1 {
		t.Fatalf("after invalid file: old rules must serve and the failure be counted (lastOK %v)", testutil.ToFloat64(r.lastOK))
	}
	if r.check(ctx) || testutil.ToFloat64(r.reloads.WithLabelValues("failure")) != 1 {
		t.Fatal("the same invalid file was processed twice")
	}

	write(rulesV2)
	if !r.check(ctx) {
		t.Fatal("valid new file not put in service")
	}
	if !serves("queue_depth") || serves("queue_messages_ready") {
		t.Fatalf("after valid file: registry = %v", disc.Registry().ExternalMetrics())
	}
	if testutil.ToFloat64(r.lastOK) != 1 || testutil.ToFloat64(r.reloads.WithLabelValues("success")) != 1 {
		t.Fatal("success not recorded")
	}
}

// TestReloadChecksBackends: a reload naming a backend the backends file does not
// define is rejected (the old rules keep serving); one naming a defined backend is
// put in service and discovered there.
func TestReloadChecksBackends(t *testing.T) {
	mapper := rulefile.DefaultRESTMapper()
	def := &promfake.Client{SeriesByMatch: map[string][]promfake.Series{}}
	team := &promfake.Client{SeriesByMatch: map[string][]promfake.Series{
		"queue_messages_ready": {{Name: "queue_messages_ready", Labels: map[string]string{"queue": "a"}}},
	}}
	reg := prometheus.NewRegistry()
	disc, err := discovery.New(discovery.Options{Client: def, Backends: prom.Backends{"team": team}, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	r, err := newReloader(path, "initial", rules.Options{Mapper: mapper, Backends: []string{"team"}}, disc, reg)
	if err != nil {
		t.Fatal(err)
	}
	withBackend := func(name string) string {
		return "externalRules:\n- seriesQuery: 'queue_messages_ready'\n  backend: " + name +
			"\n  resources: {namespaced: false}\n  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'\n"
	}
	ctx := context.Background()
	if err := os.WriteFile(path, []byte(withBackend("tem")), 0o600); err != nil {
		t.Fatal(err)
	}
	if r.check(ctx) || testutil.ToFloat64(r.reloads.WithLabelValues("failure")) != 1 {
		t.Fatal("rules naming an unknown backend put in service")
	}
	if err := os.WriteFile(path, []byte(withBackend("team")), 0o600); err != nil {
		t.Fatal(err)
	}
	if !r.check(ctx) {
		t.Fatal("rules naming a defined backend rejected")
	}
	if tg, ok := disc.Registry().External("queue_messages_ready"); !ok || tg.Rule.Backend() != "team" {
		t.Fatalf("not discovered in the team backend: %v %v", tg, ok)
	}
}
