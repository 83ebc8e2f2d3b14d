package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ebbflow/ebbflow/test/realnode/kit"
	"github.com/ebbflow/ebbflow/test/realnode/topcheck"
)

// compareTopDuringLoad compares, while the load is steady, what `kubectl top
// pods` shows (ebbflow-adapter's metrics.k8s.io, from Prometheus) with what
// the kubelet itself serves on /metrics/resource, read through
// kube-apiserver's node proxy every second: CPU against the rate of the
// kubelet's counters over the adapter's window (kit.ResourceWindow) ending
// while kubectl top ran, from the samples Prometheus may have had then,
// memory against its working set (topcheck.Compare).
// It starts reading after wait and runs kubectl top topcheck.Settle, a
// window and a few seconds later: a pod the first read saw is compared.
func compareTopDuringLoad(ctx context.Context, wait time.Duration) (topcheck.Result, error) {
	const window = kit.ResourceWindow // the adapter's (kit's resource rules)
	select {
	case <-ctx.Done():
		return topcheck.Result{}, ctx.Err()
	case <-time.After(wait):
	}
	var reads topcheck.Reads
	readUntil := time.Now().Add(topcheck.Settle + window + 5*time.Second)
	for i := 0; time.Now().Before(readUntil); i++ {
		k, err := kubeletResource(ctx)
		if err != nil {
			return topcheck.Result{}, fmt.Errorf("kubelet read %d: %w", i, err)
		}
		reads.Add(k)
		select {
		case <-ctx.Done():
			return topcheck.Result{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	start := time.Now()
	out, err := kubectlErr(ctx, "", "top", "pods", "-n", appNS, "--no-headers")
	if err != nil {
		return topcheck.Result{}, err
	}
	end := time.Now()
	// A last read, so that the kubelet's samples reach the call's end.
	k, err := kubeletResource(ctx)
	if err != nil {
		return topcheck.Result{}, fmt.Errorf("kubelet read after kubectl top: %w", err)
	}
	reads.Add(k)
	top, err := topcheck.ParseTop(out)
	if err != nil {
		return topcheck.Result{}, err
	}
	// Prometheus may lack a sample stamped up to a scrape interval (and the
	// scrape's time) before the adapter's query: two intervals.
	q := topcheck.Query{Start: start, End: end, Window: window, Lag: 2 * kit.DefaultScrapeInterval}
	return topcheck.Compare(top, q, reads), nil
}

// kubeletResource reads the kubelet's /metrics/resource for the app's
// namespace.
func kubeletResource(ctx context.Context) (topcheck.Kubelet, error) {
	body, err := env.C.Client().CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/ebbflow-node/proxy/metrics/resource").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubelet /metrics/resource: %w", err)
	}
	return topcheck.ParseKubelet(string(body), appNS)
}

// testUpgradeRules adds the first external rule with helm upgrade: the
// adapter serves the metric without a restart of its pods.
func testUpgradeRules(ctx context.Context, t *testing.T) {
	before := podUIDs(ctx, t, "app.kubernetes.io/name=ebbflow-adapter")
	values := writeFile(t, "values.yaml", chartValues(queueRule))
	helm(ctx, t, "upgrade", release, "charts/ebbflow", "--namespace", chartNS, "--values", values, "--wait", "--timeout", "3m")
	kubectl(ctx, t, queueApp, "apply", "-f", "-")
	waitDeploymentReady(ctx, t, appNS, "queue", 2*time.Minute)
	t0 := time.Now()
	path := "/apis/external.metrics.k8s.io/v1beta1/namespaces/" + appNS + "/queue_messages_ready"
	var list struct {
		Items []struct {
			Value string `json:"value"`
		} `json:"items"`
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		return getRaw(ctx, path, &list) == nil && len(list.Items) == 1, nil
	})
	if err != nil {
		t.Fatalf("GET %s after helm upgrade: no value within 3 min (got %+v)", path, list)
	}
	t.Logf("new external metric served %v after helm upgrade returned", time.Since(t0).Round(time.Second))
	after := podUIDs(ctx, t, "app.kubernetes.io/name=ebbflow-adapter")
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("adapter pods replaced by a rule change: before %v, after %v", before, after)
	}
}

// queueApp is the sample app's queue: its queue_messages_ready is the
// external metric of queueRule.
var queueApp = kit.SampleApp(appNS, "queue", "--mode=queue")

// podUIDs maps the chart's pods matching selector to their UID and restarts.
func podUIDs(ctx context.Context, t *testing.T, selector string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range podsOf(ctx, t, chartNS, selector) {
		restarts := int32(0)
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		out[p.Name] = fmt.Sprintf("%s/%d", p.UID, restarts)
	}
	return out
}

// testUninstall uninstalls the release; nothing of it may remain but the
// CRD, which the chart keeps on purpose (autoscaler.crd.keep).
func testUninstall(ctx context.Context, t *testing.T) {
	kubectl(ctx, t, "", "delete", "namespace", appNS, "--wait=false")
	helm(ctx, t, "uninstall", release, "--namespace", chartNS, "--wait", "--timeout", "3m")
	var left []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 90*time.Second, true, func(context.Context) (bool, error) {
		left = leftovers(ctx, t)
		return len(left) == 0, nil
	})
	if err != nil {
		t.Errorf("helm uninstall left: %v", left)
	}
}

// leftovers lists what remains of the release: every object in its
// namespace but those every namespace has, and cluster-scoped objects
// carrying its instance label or naming it.
func leftovers(ctx context.Context, t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := kubectlErr(ctx, "", "get", "deployments,replicasets,pods,services,configmaps,secrets,serviceaccounts,roles,rolebindings,leases,poddisruptionbudgets,endpointslices",
		"-n", chartNS, "-o", "name", "--request-timeout=20s")
	if err != nil && !apierrors.IsNotFound(err) {
		return []string{err.Error()}
	}
	var left []string
	for line := range strings.Lines(out) {
		name := strings.TrimSpace(line)
		switch name {
		case "", "configmap/kube-root-ca.crt", "serviceaccount/default":
			continue
		}
		left = append(left, name)
	}
	// Cluster-scoped: what carries the release's label, and the metrics
	// APIServices whatever their labels. (The CRD and its API group stay on
	// purpose: autoscaler.crd.keep.)
	labelled, err := kubectlErr(ctx, "", "get", "clusterroles,clusterrolebindings,apiservices,mutatingwebhookconfigurations,validatingwebhookconfigurations",
		"-l", "app.kubernetes.io/instance="+release, "-o", "name", "--request-timeout=20s")
	if err != nil {
		return []string{err.Error()}
	}
	apis, err := kubectlErr(ctx, "", "get", "apiservices", "-o", "name", "--request-timeout=20s")
	if err != nil {
		return []string{err.Error()}
	}
	for line := range strings.Lines(labelled + apis) {
		name := strings.TrimSpace(line)
		if strings.HasPrefix(name, "clusterrole") || strings.HasPrefix(name, "mutating") || strings.HasPrefix(name, "validating") ||
			strings.HasSuffix(name, "metrics.k8s.io") {
			left = append(left, name)
		}
	}
	return left
}
