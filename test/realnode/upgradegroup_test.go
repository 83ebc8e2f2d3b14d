package realnode

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// testUpgradeAddsMetricsGroup turns metrics.k8s.io on in a release
// installed without it (kit.WithoutResourceMetrics), as a user replacing
// metrics-server does: `helm upgrade` with adapter.resourceMetrics.enabled
// rolls the adapter and registers v1beta1.metrics.k8s.io, which becomes
// Available, and `kubectl top pods` answers for every pod of the release,
// with no step but the upgrade, each within a bound.
func testUpgradeAddsMetricsGroup(ctx context.Context, t *testing.T) {
	if out, err := kubectlErr(ctx, "", "get", "apiservice", apiResource, "-o", "name"); err == nil {
		t.Fatalf("the APIService %s exists before the upgrade: %s", apiResource, out)
	}
	if out, err := kubectlErr(ctx, "", "top", "pods", "-n", chartNS); err == nil {
		t.Fatalf("kubectl top pods answered before metrics.k8s.io was turned on:\n%s", out)
	}
	values := writeFile(t, "values.yaml", chartValues(" []"))
	t0 := time.Now()
	helm(ctx, t, "upgrade", release, "charts/ebbflow", "--namespace", chartNS, "--values", values, "--wait", "--timeout", "3m")
	upgraded := time.Since(t0)
	available := waitAPIServicesAvailable(ctx, t, 60*time.Second, apiResource)

	t1 := time.Now()
	var out string
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if out, err = kubectlErr(ctx, "", "top", "pods", "-n", chartNS, "--no-headers"); err != nil {
			out = err.Error()
			return false, nil
		}
		missing = missing[:0]
		for _, p := range livePods(podsOf(ctx, t, chartNS, "app.kubernetes.io/instance="+release)) {
			if !hasLineFor(out, p.Name) {
				missing = append(missing, p.Name)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("kubectl top pods -n %s: not every pod of the release within 90 s of the APIService's availability (missing %v):\n%s", chartNS, missing, out)
	}
	t.Logf("helm upgrade --wait adding metrics.k8s.io %v; %s Available %v after it returned; kubectl top pods answered for every pod %v later:\n%s",
		upgraded.Round(100*time.Millisecond), apiResource, available.Round(100*time.Millisecond), time.Since(t1).Round(100*time.Millisecond), out)
}

// hasLineFor reports whether a line of kubectl's table starts with name.
func hasLineFor(table, name string) bool {
	for line := range strings.Lines(table) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return true
		}
	}
	return false
}
