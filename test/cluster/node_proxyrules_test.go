package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// foreignChain stands for another kube-proxy's rules: a KUBE-* chain no
// kube-proxy names, reached by a jump with a quoted comment, as kube-proxy
// writes its jumps.
const foreignChain = "KUBE-EBBFLOW-FOREIGN"

var foreignJump = []string{"OUTPUT", "-m", "comment", "--comment", "another cluster's kube-proxy", "-j", foreignChain}

// TestRealNodeLeavesOtherKubeProxiesAlone: with another kube-proxy's rules
// on the machine, Start refuses, saying why, and changes nothing; the sweep
// leaves KUBE-* chains alone while a kube-proxy other than the run's runs,
// and removes them, jumps included, once none does.
func TestRealNodeLeavesOtherKubeProxiesAlone(t *testing.T) {
	lock := holdNodeLock(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if found, err := kubeProxyRules(ctx); err != nil || len(found) > 0 {
		t.Fatalf("this test needs a machine without kube-proxy rules, found %v (%v)", found, err)
	}
	if _, err := run(ctx, "iptables", "-w", "-t", "nat", "-N", foreignChain); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_, _ = run(bg, "iptables", append([]string{"-w", "-t", "nat", "-D"}, foreignJump...)...)
		_, _ = run(bg, "iptables", "-w", "-t", "nat", "-X", foreignChain)
	})
	if _, err := run(ctx, "iptables", append([]string{"-w", "-t", "nat", "-A"}, foreignJump...)...); err != nil {
		t.Fatal(err)
	}

	c, err := Start(ctx, Options{RealNode: true, NoAdapter: true, NoFakeNodes: true, Log: testLog{t}, nodeLock: lock})
	if err == nil {
		_ = c.Stop()
		t.Fatal("the real node started beside another kube-proxy's rules")
	}
	if !strings.Contains(err.Error(), "another kube-proxy's rules") || !strings.Contains(err.Error(), "iptables nat "+foreignChain) {
		t.Errorf("refusal does not say why: %v", err)
	}
	t.Logf("refused: %v", err)
	assertForeignRules(ctx, t, true)
	assertNoGuardLeft(t)
	if _, ok := readNodeOwner(); ok {
		t.Error("a refused start left an owner record")
	}

	// A kube-proxy that is not the run's: the sweep must leave the chains.
	fake := filepath.Join(t.TempDir(), "kube-proxy")
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, sleep, 0o755); err != nil {
		t.Fatal(err)
	}
	other := exec.Command(fake, "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	err = removeKubeProxyRules(ctx, t.TempDir())
	_ = other.Process.Kill()
	_ = other.Wait()
	if err == nil || !strings.Contains(err.Error(), "another kube-proxy runs") {
		t.Errorf("sweep beside another kube-proxy: want it refused, got %v", err)
	}
	assertForeignRules(ctx, t, true)

	if err := removeKubeProxyRules(ctx, t.TempDir()); err != nil {
		t.Fatalf("sweep with no other kube-proxy: %v", err)
	}
	assertForeignRules(ctx, t, false)
}

// assertForeignRules checks that the foreign chain and its jump are there
// (want) or gone.
func assertForeignRules(ctx context.Context, t *testing.T, want bool) {
	t.Helper()
	out, err := run(ctx, "iptables-save", "-t", "nat")
	if err != nil {
		t.Fatal(err)
	}
	chain := strings.Contains(out, ":"+foreignChain+" ")
	jump := strings.Contains(out, "-j "+foreignChain)
	if chain != want || jump != want {
		t.Errorf("foreign chain present %v, its jump %v; want %v:\n%s", chain, jump, want, grepLines(out, foreignChain))
	}
}
