package cluster

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const testRules = `
rules:
- seriesQuery: 'up'
  resources: {overrides: {}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'up'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
`

// TestStartStop starts a whole cluster, checks what Start promises and that
// Stop leaves no process and no listening port behind.
func TestStartStop(t *testing.T) {
	var log strings.Builder
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{RulesYAML: []byte(testRules), Nodes: 2, Log: &log})
	t.Log(log.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster started in %v", time.Since(start))
	stopped := false
	defer func() {
		if !stopped {
			t.Log(c.DumpLogs(30))
			_ = c.Stop()
		}
	}()

	nodes, err := c.Client().CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Errorf("got %d nodes, want 2", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		if !nodeReady(&n) {
			t.Errorf("node %s not Ready", n.Name)
		}
	}
	if err := c.WaitAPIServicesAvailable(ctx, time.Second); err != nil {
		t.Error(err)
	}
	if err := c.RestartAdapter(ctx); err != nil {
		t.Errorf("restart adapter: %v", err)
	}
	if _, err := c.KubeconfigFor("alice", "team-a"); err != nil {
		t.Error(err)
	}

	c.mu.Lock()
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.Pid())
	}
	c.mu.Unlock()
	addrs := []int{c.ports.etcd, c.ports.apiserver, c.ports.controllerMgr, c.ports.adapter}
	dir := c.Dir()

	t0 := time.Now()
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(t0))
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(-pid, 0); err == nil {
			t.Errorf("process group %d still alive", pid)
		}
	}
	for _, port := range addrs {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Errorf("port %d still in use: %v", port, err)
			continue
		}
		ln.Close()
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("work directory %s not removed: %v", dir, err)
	}
}

// TestStartFailureStopsEverything makes the last step fail (the adapter
// rejects a rule whose regexp does not compile) and checks that Start
// reports the adapter's complaint and leaves no process behind.
func TestStartFailureStopsEverything(t *testing.T) {
	dir := t.TempDir()
	bad := `
rules:
- seriesQuery: 'up'
  resources: {overrides: {}}
  name: {matches: "([", as: "x"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{RulesYAML: []byte(bad), Nodes: 1, Dir: dir})
	if err == nil {
		_ = c.Stop()
		t.Fatal("Start succeeded with an invalid rule file")
	}
	t.Logf("Start error: %v", err)
	if !strings.Contains(err.Error(), "ebbflow-adapter exited") {
		t.Errorf("error does not say the adapter exited: %v", err)
	}
	if left := processesUsing(t, dir); len(left) > 0 {
		t.Errorf("processes left after failed Start: %v", left)
	}
}

// processesUsing returns the command lines of live processes that mention dir.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), dir) {
			found = append(found, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

func TestPrepareDir(t *testing.T) {
	dir := t.TempDir()
	if err := prepareDir(dir); err != nil {
		t.Fatalf("empty dir: %v", err)
	}
	stale := dir + "/etcd-data/member"
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/notes.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := prepareDir(dir); err != nil {
		t.Fatalf("earlier cluster dir: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale etcd data kept: %v", err)
	}
	if _, err := os.Stat(dir + "/notes.txt"); err != nil {
		t.Errorf("unrelated file removed: %v", err)
	}

	foreign := t.TempDir()
	if err := os.MkdirAll(foreign+"/adapter", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := prepareDir(foreign); err == nil {
		t.Error("prepareDir accepted a non-empty directory without marker")
	}
	if _, err := os.Stat(foreign + "/adapter"); err != nil {
		t.Errorf("foreign directory touched: %v", err)
	}
}
