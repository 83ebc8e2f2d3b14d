package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
)

// Bounds of the explain tests.
const (
	decisionTimeout = 90 * time.Second
	kubectlTimeout  = 30 * time.Second
)

// buildPlugin builds cmd/kubectl-ebbflow into a temporary directory and
// returns that directory, to be put first on PATH: kubectl then finds the
// plugin "ebbflow" as any user's kubectl would.
func buildPlugin(t *testing.T) string {
	t.Helper()
	root := buildtools.MustRepoRoot(t)
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-ebbflow"), "./cmd/kubectl-ebbflow")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kubectl-ebbflow: %v\n%s", err, out)
	}
	return dir
}

// kubectlRun is one run of the real kubectl.
type kubectlRun struct {
	stdout, stderr string
	code           int
}

// pluginCmd returns the real kubectl with args, the plugin directory first
// on PATH and, unless kubeconfigFlag, the admin kubeconfig in KUBECONFIG.
func pluginCmd(ctx context.Context, pluginDir string, kubeconfigFlag bool, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, env().Kubectl(), args...)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if !kubeconfigFlag {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+env().AdminKubeconfig())
	}
	return cmd
}

// kubectl runs the real kubectl to completion.
func kubectl(t *testing.T, pluginDir string, kubeconfigFlag bool, args ...string) kubectlRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := pluginCmd(ctx, pluginDir, kubeconfigFlag, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := kubectlRun{stdout: out.String(), stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("kubectl %q: %v", args, err)
	}
	return r
}

func ebbflowClient(t *testing.T) ebbclient.Interface {
	t.Helper()
	c, err := ebbclient.NewForConfig(env().RESTConfig())
	if err != nil {
		t.Fatalf("ebbflow clientset: %v", err)
	}
	return c
}

// waitDecision polls the Autoscaler until its record satisfies cond and
// returns the record.
func waitDecision(t *testing.T, c ebbclient.Interface, ns, name, want string, cond func(*v1alpha1.DecisionRecord) bool) *v1alpha1.DecisionRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), decisionTimeout)
	defer cancel()
	var last *v1alpha1.DecisionRecord
	for {
		a, err := c.AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && a.Status.LastDecision != nil {
			last = a.Status.LastDecision
			if cond(last) {
				return last
			}
		}
		select {
		case <-ctx.Done():
			b, _ := json.Marshal(last)
			t.Fatalf("autoscaler %s/%s: no decision with %s within %v; last: %s\n%s", ns, name, want, decisionTimeout, b,
				env().LogTail(cluster.Autoscaler, 30))
		case <-time.After(hpaPollInterval):
		}
	}
}

func hasStep(rec *v1alpha1.DecisionRecord, stage string, from, to int32) bool {
	for _, s := range rec.Steps {
		if s.Stage == stage && s.From == from && s.To == to {
			return true
		}
	}
	return false
}

// TestExplainPlugin runs `kubectl ebbflow explain` through kubectl's plugin
// mechanism against an Autoscaler that ebbflow-autoscaler evaluates: an
// External queue metric proposes 7 replicas, the scale-up policy (2 pods per
// minute) holds the target at 3. The table, -o json and --watch must show
// the stored record; a missing object and an HPA ebbflow does not manage
// are one-line errors with a non-zero exit.
func TestExplainPlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := env().StartAutoscaler(ctx, cluster.AutoscalerOptions{HPAMode: "off", Args: []string{"--v=2"}}); err != nil {
		t.Fatalf("start ebbflow-autoscaler: %v", err)
	}
	pluginDir := buildPlugin(t)
	ns := newNamespace(t, "e2e-explain-")
	q := setQueue(t, ns+"-q", 65)
	createDeployment(t, ns, "web")
	ebb := ebbflowClient(t)
	spec := hpaSpec(1, 10, &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0),
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}},
		},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
	}, externalMetric(q, averageValue("10")))
	spec.ScaleTargetRef.Name = "web"
	if _, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Create(ctx, &v1alpha1.Autoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1test.FromHPASpec(&spec)}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create autoscaler: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ebbflow-autoscaler log tail:\n%s", env().LogTail(cluster.Autoscaler, 60))
		}
	})
	// After the first scale (1 → 3) the record stays the same until the
	// policy period ends: 65 at 3 replicas still proposes 7, held at 3.
	rec := waitDecision(t, ebb, ns, "web", "3 → 3 held by ScaleUpPolicy 7 → 3", func(r *v1alpha1.DecisionRecord) bool {
		return r.CurrentReplicas == 3 && r.DesiredReplicas == 3 && hasStep(r, "ScaleUpPolicy", 7, 3)
	})

	t.Run("table", func(t *testing.T) {
		r := kubectl(t, pluginDir, false, "ebbflow", "explain", "-n", ns, "web")
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("kubectl ebbflow explain: exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
		}
		t.Logf("kubectl ebbflow explain -n %s web:\n%s", ns, r.stdout)
		// 65 over 3 replicas is 21.667 per pod (milli-units, rounded up).
		value := resource.NewMilliQuantity(21667, resource.DecimalSI).String()
		if got := rec.Metrics[0].Value.String(); got != value {
			t.Errorf("record: metric value %s, want %s", got, value)
		}
		for _, re := range []string{
			`(?m)^Autoscaler:\s+` + ns + `/web$`,
			`(?m)^Target:\s+Deployment/web$`,
			`(?m)^Replicas:\s+3 → 3$`,
			`(?m)^Outcome:\s+Unchanged \(not scaled: `,
			`(?m)^\s+External\s+queue_messages_ready\s+` + value + `\s+AverageValue 10\s+\S+\s+7\s+`,
			`(?m)^Winning proposal:\s+7 from queue_messages_ready$`,
			`(?m)^\s+ScaleUpPolicy\s+7 → 3\s+.*Pods 2 per 60s`,
			`(?m)^Desired replicas:\s+3$`,
			`(?m)^\s+ScalingLimited\s+True\s+ScaleUpLimit\s`,
		} {
			if !regexp.MustCompile(re).MatchString(r.stdout) {
				t.Errorf("no match for %s in\n%s", re, r.stdout)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		// --kubeconfig after the plugin name instead of KUBECONFIG.
		r := kubectl(t, pluginDir, true, "ebbflow", "explain", "--kubeconfig", env().AdminKubeconfig(), "-n", ns, "autoscaler/web", "-o", "json")
		if r.code != 0 {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
		var got v1alpha1.DecisionRecord
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("decode: %v\n%s", err, r.stdout)
		}
		now, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(&got, rec) && !apiequality.Semantic.DeepEqual(&got, now.Status.LastDecision) {
			t.Errorf("printed record %s\nwant the stored one %+v", r.stdout, rec)
		}
		if got.WinningMetric != QueueGauge || ptr.Deref(got.Proposal, 0) != 7 || !hasStep(&got, "ScaleUpPolicy", 7, 3) {
			t.Errorf("printed record %s: want queue_messages_ready proposing 7, limited by ScaleUpPolicy to 3", r.stdout)
		}
	})

	t.Run("errors", func(t *testing.T) {
		createHPA(t, ns, "plain", 3, externalMetric(q, averageValue("10")))
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"-n", ns, "nosuch"}, fmt.Sprintf(`error: autoscaler "nosuch" not found in namespace %q`, ns)},
			{[]string{"-n", ns, "hpa/plain"}, fmt.Sprintf("error: horizontalpodautoscaler %s/plain is not managed by ebbflow: ", ns)},
		} {
			r := kubectl(t, pluginDir, false, append([]string{"ebbflow", "explain"}, tt.args...)...)
			if r.code == 0 || r.stdout != "" || !strings.HasPrefix(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("kubectl ebbflow explain %q: exit %d, stdout %q, stderr %q; want non-zero, one line starting %q",
					tt.args, r.code, r.stdout, r.stderr, tt.want)
			}
		}
	})

	t.Run("watch", func(t *testing.T) {
		testExplainWatch(t, pluginDir, ns, q, rec)
	})
}

// testExplainWatch follows the Autoscaler with `kubectl ebbflow explain
// --watch -o json`, drops the queue so that the next evaluation scales down,
// and expects the stored decision first, then the scale-down, each once;
// SIGINT ends it with exit code 0.
func testExplainWatch(t *testing.T, pluginDir, ns string, q testQueue, first *v1alpha1.DecisionRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), decisionTimeout)
	defer cancel()
	cmd := pluginCmd(ctx, pluginDir, false, "ebbflow", "explain", "-n", ns, "web", "--watch", "-o", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	records := make(chan v1alpha1.DecisionRecord)
	go func() {
		defer close(records)
		dec := json.NewDecoder(bufio.NewReader(stdout))
		for {
			var r v1alpha1.DecisionRecord
			if err := dec.Decode(&r); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("decode watch output: %v", err)
				}
				return
			}
			records <- r
		}
	}()
	var seen []v1alpha1.DecisionRecord
	next := func(what string) v1alpha1.DecisionRecord {
		select {
		case r, ok := <-records:
			if !ok {
				t.Fatalf("watch ended before %s; stderr %q", what, errOut.String())
			}
			seen = append(seen, r)
			return r
		case <-ctx.Done():
			t.Fatalf("no %s from the watch within %v; stderr %q", what, decisionTimeout, errOut.String())
		}
		return v1alpha1.DecisionRecord{}
	}
	if r := next("first decision"); r.Time.Before(&first.Time) {
		t.Errorf("first decision printed is from %v, older than the stored %v", r.Time, first.Time)
	}
	q.set(5)
	for {
		r := next("scale-down decision")
		if r.Outcome == v1alpha1.OutcomeScaledDown {
			break
		}
	}
	for i := 1; i < len(seen); i++ {
		if !seen[i].Time.After(seen[i-1].Time.Time) {
			t.Errorf("decision %d at %v printed after one at %v: each decision once, in order", i, seen[i].Time, seen[i-1].Time)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for range records { // drain until the plugin exits
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("kubectl ebbflow explain --watch after SIGINT: %v; stderr %q", err, errOut.String())
	}
}
