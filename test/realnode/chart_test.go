package realnode

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ebbflow/ebbflow/test/realnode/kit"
)

// chartValues are the values of kit.ChartValues with the given external
// rules.
func chartValues(externalRules string) string { return env.ChartValues(externalRules) }

// queueRule is the external rule of the sample app's queue.
const queueRule = kit.QueueRule

// TestChartOnRealNode installs the chart as a user does and walks through
// what only a real install shows, in order: pods Ready through their own
// probes in a restricted namespace, metrics.k8s.io added by an upgrade, the
// APIServices Available through the chart's Service, the three APIs
// answered by the pods, the running pods locked down, the egress guard on
// the running node, a workload scaled on real traffic (workload_test.go),
// leader handover (graceful, then SIGKILL), a rule change picked up without
// a restart, a Pods metric's forecast scaling before a daily ramp while the
// HPA scales after it (forecast_test.go), and an uninstall that leaves
// nothing behind.
func TestChartOnRealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	restrictedNamespace(ctx, t, chartNS)
	restrictedNamespace(ctx, t, appNS)
	// Without metrics.k8s.io: UpgradeAddsMetricsGroup turns it on.
	values := writeFile(t, "values.yaml", kit.WithoutResourceMetrics(chartValues(" []")))
	t0 := time.Now()
	out := helm(ctx, t, "install", release, "charts/ebbflow", "--namespace", chartNS, "--values", values, "--wait", "--timeout", "4m")
	t.Logf("helm install --wait: %v", time.Since(t0).Round(100*time.Millisecond))
	if !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("helm install:\n%s", out)
	}

	t.Run("PodsReady", func(t *testing.T) {
		for _, d := range []string{adapterDepl, scalerDepl} {
			dep := waitDeploymentReady(ctx, t, chartNS, d, 2*time.Minute)
			if *dep.Spec.Replicas != 2 {
				t.Errorf("%s: %d replicas, want the chart's default 2", d, *dep.Spec.Replicas)
			}
		}
		for _, p := range podsOf(ctx, t, chartNS, "app.kubernetes.io/instance="+release) {
			if p.Spec.NodeName != "ebbflow-node" {
				t.Errorf("pod %s runs on %q, want the real node", p.Name, p.Spec.NodeName)
			}
		}
	})
	t.Run("UpgradeAddsMetricsGroup", func(t *testing.T) { testUpgradeAddsMetricsGroup(ctx, t) })
	t.Run("APIServicesAvailable", func(t *testing.T) {
		took := waitAPIServicesAvailable(ctx, t, 2*time.Minute, apiCustom1, apiCustom2, apiExternal, apiResource, apiResV1)
		t.Logf("APIServices Available %v after the pods were Ready", took.Round(100*time.Millisecond))
	})
	t.Run("APIsAnswered", func(t *testing.T) { checkAPIsAnswered(ctx, t) })
	t.Run("RunningPodsLocked", func(t *testing.T) { testRunningPodsLocked(ctx, t) })
	t.Run("GuardOnRunningNode", func(t *testing.T) { testGuardOnRunningNode(ctx, t) })
	t.Run("Workload", func(t *testing.T) { testWorkload(ctx, t) })
	t.Run("LeaderHandover", func(t *testing.T) { testLeaderHandover(ctx, t) })
	t.Run("LeaderKilled", func(t *testing.T) { testLeaderKilled(ctx, t) })
	t.Run("UpgradeRulesWithoutRestart", func(t *testing.T) { testUpgradeRules(ctx, t) })
	t.Run("ForecastPodsMetric", func(t *testing.T) { testForecastPodsMetric(ctx, t) })
	t.Run("UninstallLeavesNothing", func(t *testing.T) { testUninstall(ctx, t) })
}

// checkAPIsAnswered reads each API group through kube-apiserver, which
// proxies to the pods: custom and external list their metrics, and
// metrics.k8s.io has the chart's own pods with their usage.
func checkAPIsAnswered(ctx context.Context, t *testing.T) {
	for _, path := range []string{"/apis/custom.metrics.k8s.io/v1beta2", "/apis/custom.metrics.k8s.io/v1beta1", "/apis/external.metrics.k8s.io/v1beta1"} {
		var list struct {
			Kind      string `json:"kind"`
			Resources []struct {
				Name string `json:"name"`
			} `json:"resources"`
		}
		if err := getRaw(ctx, path, &list); err != nil {
			t.Error(err)
			continue
		}
		if list.Kind != "APIResourceList" {
			t.Errorf("GET %s: kind %q, want APIResourceList", path, list.Kind)
		}
	}
	var pods struct {
		Items []struct {
			Metadata   metav1.ObjectMeta `json:"metadata"`
			Containers []struct {
				Name  string            `json:"name"`
				Usage map[string]string `json:"usage"`
			} `json:"containers"`
		} `json:"items"`
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		err := getRaw(ctx, "/apis/metrics.k8s.io/v1beta1/namespaces/"+chartNS+"/pods", &pods)
		return err == nil && len(pods.Items) >= 4, nil
	})
	if err != nil {
		t.Fatalf("metrics.k8s.io: want the 4 pods of the release with usage, got %+v", pods.Items)
	}
	for _, p := range pods.Items {
		if len(p.Containers) == 0 || p.Containers[0].Usage["memory"] == "" {
			t.Errorf("pod %s: no memory usage in %+v", p.Metadata.Name, p.Containers)
		}
	}
	checkTopReadsV1(ctx, t)
}

// checkTopReadsV1 runs kubectl top pods with its request log (-v=6) and
// wants it to have read metrics.k8s.io/v1, the version the chart registers
// with the higher priority, and not v1beta1.
func checkTopReadsV1(ctx context.Context, t *testing.T) {
	cmd := exec.CommandContext(ctx, env.C.Kubectl(), "--kubeconfig", env.C.AdminKubeconfig(), "top", "pods", "-n", chartNS, "--no-headers", "-v=6")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl top pods -v=6: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	v1 := "/apis/metrics.k8s.io/v1/namespaces/" + chartNS + "/pods"
	beta := "/apis/metrics.k8s.io/v1beta1/namespaces/"
	if log := stderr.String(); !strings.Contains(log, v1) || strings.Contains(log, beta) {
		t.Errorf("kubectl top pods: want a read of %s and none of v1beta1; request log:\n%s", v1, log)
	}
}

// leaseHolder returns the holder of the autoscaler's leader-election Lease.
func leaseHolder(ctx context.Context) (string, *coordinationv1.Lease, error) {
	l, err := env.C.Client().CoordinationV1().Leases(chartNS).Get(ctx, scalerDepl, metav1.GetOptions{})
	if err != nil {
		return "", nil, err
	}
	if l.Spec.HolderIdentity == nil {
		return "", l, nil
	}
	return *l.Spec.HolderIdentity, l, nil
}
