package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/cli"
)

// fromCPA runs `ebbflow proportional from-cpa args...` in process with stdin
// and returns its stdout.
func fromCPA(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := cli.NewRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetArgs(append([]string{"proportional", "from-cpa"}, args...))
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("from-cpa %q: %v\n%s", args, err, errOut.String())
	}
	t.Logf("from-cpa %q notes:\n%s", args, errOut.String())
	return out.String()
}

// kubectl runs the cluster's kubectl as cluster admin with stdin and returns
// its combined output and error.
func kubectlIn(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env().Kubectl(), append([]string{"--kubeconfig=" + env().AdminKubeconfig()}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// cpaDeployment is a CPA Deployment of namespace ns as clusters run it.
func cpaDeployment(ns, configMap, target, defaultParams, nodeLabels string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      containers:
      - name: autoscaler
        image: registry.k8s.io/cpa/cluster-proportional-autoscaler:v1.10.3
        command:
        - /cluster-proportional-autoscaler
        - --namespace=%[1]s
        - --configmap=%[2]s
        - --target=%[3]s
        - '--default-params=%[4]s'
        - --nodelabels=%[5]s
        - --logtostderr=true
`, ns, configMap, target, defaultParams, nodeLabels)
}

// testFromCPAValidates applies what from-cpa writes with kubectl
// --dry-run=server: the CRD's validation (schema and CEL rules) must accept
// every form it emits, and reject CPA params that are errors or hazards
// with a message naming the problem.
func testFromCPAValidates(t *testing.T) {
	ns := newNamespace(t, "e2e-prop-fromcpa-")
	ladderCM := fmt.Sprintf(`---
apiVersion: v1
kind: ConfigMap
metadata: {name: ladder-autoscaler, namespace: %s}
data:
  ladder: '{"coresToReplicas": [[64, 3], [1, 1], [512, 5]], "nodesToReplicas": [[1, 1], [2, 2]], "includeUnschedulableNodes": true}'
`, ns)
	inputs := map[string]string{
		"ladder ConfigMap": cpaDeployment(ns, "ladder-autoscaler", "deployment/dns,replicaset/rs", `{"linear":{"nodesPerReplica":1}}`, "pool=system") + ladderCM,
		"linear default params": cpaDeployment(ns, "linear-autoscaler", "Deployment/coredns",
			`{"linear":{"coresPerReplica":256,"nodesPerReplica":16,"min":2,"max":40,"preventSinglePointFailure":true,"includeUnschedulableNodes":true}}`, "node-role.kubernetes.io/worker="),
		"linear no max": cpaDeployment(ns, "nomax", "deployment/web", `{"linear":{"coresPerReplica":0.7}}`, "pool in (a,b)"),
	}
	for what, in := range inputs {
		for _, ref := range []string{"true", "false"} {
			manifest := fromCPA(t, in, "-f", "-", "--configmap-ref="+ref)
			if out, err := kubectlIn(manifest, "apply", "--dry-run=server", "-f", "-"); err != nil {
				t.Errorf("%s, --configmap-ref=%s: kubectl apply --dry-run=server: %v\n%s\nmanifest:\n%s", what, ref, err, out, manifest)
			} else if !strings.Contains(out, "(server dry run)") {
				t.Errorf("%s: kubectl said %q", what, out)
			}
		}
	}
	rejected := map[string]struct{ params, want string }{
		"empty ladder":       {`ladder: {}`, "empty ladder"},
		"negative cores":     {`linear: {coresPerReplica: -1, nodesPerReplica: 1}`, "coresPerReplica"},
		"both per-replica 0": {`linear: {min: 2}`, "coresPerReplica or nodesPerReplica"},
		"linear and ladder":  {`{linear: {nodesPerReplica: 1}, ladder: {nodesToReplicas: [[1, 1]]}}`, "exactly one of linear, ladder and configMapRef"},
	}
	for what, r := range rejected {
		params := r.params
		if !strings.HasPrefix(params, "{") {
			params = "{" + params + "}"
		}
		manifest := fmt.Sprintf(`apiVersion: autoscaling.ebbflow.dev/v1alpha1
kind: Autoscaler
metadata: {name: bad, namespace: %s}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: dns}
  maxReplicas: 10
  metrics:
  - type: ClusterProportional
    clusterProportional: %s
`, ns, params)
		out, err := kubectlIn(manifest, "create", "--dry-run=server", "-f", "-")
		if err == nil || !strings.Contains(out, r.want) {
			t.Errorf("%s: kubectl create --dry-run=server: err %v, output %q; want a rejection naming %q", what, err, out, r.want)
		}
	}
}

// waitAutoscalerCondition waits until the Autoscaler has condition typ with
// status and a message containing msg.
func waitAutoscalerCondition(t *testing.T, ns, name string, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, msg string) {
	t.Helper()
	waitProp(t, ns, name, fmt.Sprintf("no condition %s=%s with %q", typ, status, msg), func(context.Context) bool {
		c, ok := propCondition(t, ns, name, typ)
		if ok && c.Status == status && strings.Contains(c.Message, msg) {
			t.Logf("%s/%s: %s=%s (%s: %s)", ns, name, typ, c.Status, c.Reason, c.Message)
			return true
		}
		return false
	})
}

// waitEvent waits for an event of type typ and reason about Autoscaler name.
func waitEvent(t *testing.T, ns, name, typ, reason string) {
	t.Helper()
	waitProp(t, ns, name, fmt.Sprintf("no %s event %s", typ, reason), func(ctx context.Context) bool {
		return hasEvent(ctx, t, ns, name, func(e corev1.Event) bool { return e.Type == typ && e.Reason == reason })
	})
}

// waitPropDecision waits until the Autoscaler's last decision satisfies ok.
func waitPropDecision(t *testing.T, ns, name string, ok func(*v1alpha1.DecisionRecord) bool, want string) {
	t.Helper()
	waitProp(t, ns, name, "no decision with "+want, func(ctx context.Context) bool {
		a, err := ebb(t).AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || a.Status.LastDecision == nil || !ok(a.Status.LastDecision) {
			return false
		}
		d := a.Status.LastDecision
		t.Logf("%s/%s: decision: winning %q, desired %d (%s)", ns, name, d.WinningMetric, d.DesiredReplicas, want)
		return true
	})
}
