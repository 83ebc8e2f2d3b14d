// Package rulestest holds the rule files that tests of the adapter and the
// integration tests share, in testdata/ (one place), and loads them. A test whose
// point is a particular rule keeps it inline, next to what it checks.
package rulestest

import (
	"embed"
	"testing"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// The shared rule files, by name (testdata/NAME.yaml; each file says what it serves).
const (
	// PodsAndQueue serves pods/http_requests_per_second from http_requests_total
	// and the namespaced external metric queue_messages_ready.
	PodsAndQueue = "pods-and-queue"
	// Users is a rule file as users write them: pods' and services' request rates,
	// workers' in-flight gauge through a template, a cluster-wide queue.
	Users = "users"
	// ClusterQueue has one external rule: queue_messages_ready, not namespaced.
	ClusterQueue = "cluster-queue"
)

//go:embed testdata/*.yaml
var files embed.FS

// Data returns the content of the shared rule file name.
func Data(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := files.ReadFile("testdata/" + name + ".yaml")
	if err != nil {
		tb.Fatalf("shared rule file %q: %v", name, err)
	}
	return data
}

// Parse loads, validates and compiles the shared rule file name against
// rulefile.DefaultRESTMapper.
func Parse(tb testing.TB, name string) *rules.Set {
	tb.Helper()
	set, err := rules.Parse(Data(tb, name), rulefile.DefaultRESTMapper())
	if err != nil {
		tb.Fatalf("shared rule file %q: %v", name, err)
	}
	return set
}
