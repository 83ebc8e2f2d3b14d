package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	ebbfake "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/fake"
)

var autoscalersGR = schema.GroupResource{Group: v1alpha1.GroupName, Resource: "autoscalers"}

// fakeCluster holds the fake clientsets one explain run reads.
type fakeCluster struct {
	kube *kubefake.Clientset
	ebb  *ebbfake.Clientset
}

func newFakeCluster(objs ...runtime.Object) fakeCluster {
	var kubeObjs, ebbObjs []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*v1alpha1.Autoscaler); ok {
			ebbObjs = append(ebbObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	return fakeCluster{kube: kubefake.NewClientset(kubeObjs...), ebb: ebbfake.NewSimpleClientset(ebbObjs...)}
}

// rootFor returns the ebbflow command tree whose explain reads fc, at
// decisionTime+12s, in the namespace of -n (default "default").
func rootFor(fc fakeCluster) *cobra.Command {
	o := &explainOptions{
		config: genericclioptions.NewConfigFlags(false),
		now:    func() time.Time { return decisionTime.Add(12 * time.Second) },
		retry:  retryPolicy{Attempts: 3, Delay: time.Millisecond, MaxDelay: 4 * time.Millisecond, Healthy: time.Hour},
	}
	o.clients = func() (kubernetes.Interface, ebbclient.Interface, string, error) {
		ns := "default"
		if o.config.Namespace != nil && *o.config.Namespace != "" {
			ns = *o.config.Namespace
		}
		return fc.kube, fc.ebb, ns, nil
	}
	root := &cobra.Command{Use: "ebbflow", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(o.command())
	return root
}

// explain runs the command tree as main does and returns stdout, stderr
// and the exit code.
func explain(t *testing.T, fc fakeCluster, args ...string) (string, string, int) {
	t.Helper()
	root := rootFor(fc)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"explain"}, args...))
	code := Main(root)
	return out.String(), errOut.String(), code
}

func autoscaler(ns, name string, rec *v1alpha1.DecisionRecord) *v1alpha1.Autoscaler {
	return &v1alpha1.Autoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "7"},
		Spec: v1alpha1.AutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
			APIVersion: "apps/v1", Kind: "Deployment", Name: name}, MaxReplicas: 10},
		Status: v1alpha1.AutoscalerStatus{LastDecision: rec, Conditions: testConditions()},
	}
}

func hpa(t *testing.T, ns, name string, rec *v1alpha1.DecisionRecord) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
			APIVersion: "apps/v1", Kind: "Deployment", Name: name}, MaxReplicas: 10},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{Conditions: testConditions()},
	}
	if rec != nil {
		s, err := evaluation.EncodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		h.Annotations = map[string]string{v1alpha1.LastDecisionAnnotation: s}
	}
	return h
}

// TestExplainTable: the table names the object, the metrics, the winning
// proposal, the limiting step and the conditions, for each way of naming
// the object.
func TestExplainTable(t *testing.T) {
	fc := newFakeCluster(autoscaler("shop", "web", scaledUpRecord()), hpa(t, "shop", "api", scaledUpRecord()))
	want := renderTable(decisionView{Kind: kindAutoscaler, Namespace: "shop", Name: "web", Target: "Deployment/web",
		Record: scaledUpRecord(), Conditions: testConditions()}, decisionTime.Add(12*time.Second))
	for _, args := range [][]string{{"-n", "shop", "web"}, {"-n", "shop", "autoscaler/web"}, {"eas/web", "--namespace=shop"}, {"-n", "shop", "--kind", "Autoscaler", "web"}} {
		out, errOut, code := explain(t, fc, args...)
		if code != 0 || errOut != "" || out != want {
			t.Errorf("explain %q: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", args, code, errOut, out, want)
		}
	}
	wantHPA := renderTable(decisionView{Kind: kindHPA, Namespace: "shop", Name: "api", Target: "Deployment/api",
		Record: scaledUpRecord(), Conditions: testConditions()}, decisionTime.Add(12*time.Second))
	for _, args := range [][]string{{"-n", "shop", "hpa/api"}, {"-n", "shop", "--kind", "hpa", "api"}, {"-n", "shop", "horizontalpodautoscalers/api"}} {
		out, errOut, code := explain(t, fc, args...)
		if code != 0 || errOut != "" || out != wantHPA {
			t.Fatalf("explain %q: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", args, code, errOut, out, wantHPA)
		}
		for _, s := range []string{"HorizontalPodAutoscaler:", "shop/api", "Deployment/api", "queue_messages_ready", "10 from queue_messages_ready", "ScaleUpPolicy  10 → 8", "SucceededRescale"} {
			if !strings.Contains(out, s) {
				t.Errorf("explain %q: no %q in\n%s", args, s, out)
			}
		}
	}
}

// TestExplainOutputRecord: -o json and -o yaml print the stored record.
func TestExplainOutputRecord(t *testing.T) {
	fc := newFakeCluster(autoscaler("shop", "web", scaledUpRecord()), hpa(t, "shop", "api", scaledUpRecord()))
	for _, args := range [][]string{{"-n", "shop", "web", "-o", "json"}, {"-n", "shop", "hpa/api", "--output=json"}} {
		out, errOut, code := explain(t, fc, args...)
		if code != 0 {
			t.Fatalf("explain %q: exit %d, stderr %q", args, code, errOut)
		}
		var got v1alpha1.DecisionRecord
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("explain %q: %v\n%s", args, err, out)
		}
		if !apiequality.Semantic.DeepEqual(&got, scaledUpRecord()) {
			t.Errorf("explain %q printed %+v, want the stored record", args, got)
		}
	}
	out, _, code := explain(t, fc, "-n", "shop", "web", "-o", "yaml")
	if code != 0 || !strings.HasPrefix(out, "---\n") || !strings.Contains(out, "winningMetric: queue_messages_ready") {
		t.Errorf("explain -o yaml: exit %d\n%s", code, out)
	}
}

// TestExplainErrors: every failure is one line on stderr ("error: ...") and
// exit code 1, with nothing on stdout.
func TestExplainErrors(t *testing.T) {
	forbidden := newFakeCluster()
	forbidden.ebb.PrependReactor("get", "autoscalers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(autoscalersGR, "web",
			errors.New(`User "dev" cannot get resource "autoscalers" in API group "autoscaling.ebbflow.dev" in the namespace "shop"`))
	})
	notServed := newFakeCluster()
	notServed.ebb.PrependReactor("get", "autoscalers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewGenericServerResponse(404, "get", autoscalersGR, "web", "404 page not found", 0, true)
	})
	garbled := hpa(t, "shop", "api", nil)
	garbled.Annotations = map[string]string{v1alpha1.LastDecisionAnnotation: "{not json"}
	fc := newFakeCluster(autoscaler("shop", "new", nil), hpa(t, "shop", "plain", nil), hpa(t, "shop", "web", nil), garbled)
	tests := []struct {
		name string
		fc   fakeCluster
		args []string
		want string
	}{
		{"not found", fc, []string{"-n", "shop", "nosuch"}, `autoscaler "nosuch" not found in namespace "shop"`},
		{"hpa not found", fc, []string{"-n", "shop", "hpa/nosuch"}, `horizontalpodautoscaler "nosuch" not found in namespace "shop"`},
		{"an hpa of that name is no autoscaler", fc, []string{"-n", "shop", "web"}, `autoscaler "web" not found in namespace "shop"`},
		{"no decision yet", fc, []string{"-n", "shop", "new"}, "autoscaler shop/new has no decision yet: ebbflow-autoscaler has not evaluated it"},
		{"forbidden", forbidden, []string{"-n", "shop", "web"}, `not allowed to read autoscaler shop/web (get and watch on autoscalers.autoscaling.ebbflow.dev are needed): autoscalers.autoscaling.ebbflow.dev "web" is forbidden: User "dev" cannot get resource`},
		{"crd not installed", notServed, []string{"-n", "shop", "web"}, "the server does not serve autoscalers.autoscaling.ebbflow.dev (is the ebbflow Autoscaler CRD installed?)"},
		{"hpa not managed", fc, []string{"-n", "shop", "hpa/plain"}, "horizontalpodautoscaler shop/plain is not managed by ebbflow: it has no autoscaling.ebbflow.dev/last-decision annotation"},
		{"hpa record garbled", fc, []string{"-n", "shop", "hpa/api"}, "horizontalpodautoscaler shop/api: annotation autoscaling.ebbflow.dev/last-decision: decode decision record"},
		{"bad output", fc, []string{"-n", "shop", "web", "-o", "wide"}, `--output must be json or yaml (or unset for a table), not "wide"`},
		{"bad kind", fc, []string{"-n", "shop", "deploy/web"}, `unknown kind "deploy" in "deploy/web"`},
		{"kinds disagree", fc, []string{"--kind", "hpa", "autoscaler/web"}, `"autoscaler/web": the prefix says Autoscaler but --kind says HorizontalPodAutoscaler`},
		{"no name", fc, []string{"hpa/"}, `invalid name "hpa/"`},
		{"two names", fc, []string{"a", "b"}, "accepts 1 arg(s), received 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := explain(t, tt.fc, tt.args...)
			if code != 1 || out != "" {
				t.Errorf("exit %d, stdout %q; want 1 and nothing", code, out)
			}
			if !strings.HasPrefix(errOut, "error: "+tt.want) || strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
				t.Errorf("stderr %q\nwant one line starting with %q", errOut, "error: "+tt.want)
			}
		})
	}
}

func TestParseTarget(t *testing.T) {
	tests := []struct {
		arg, kind          string
		wantKind, wantName string
	}{
		{"web", "", kindAutoscaler, "web"},
		{"web", "hpa", kindHPA, "web"},
		{"HPA/web", "", kindHPA, "web"},
		{"hpa/web", "HorizontalPodAutoscaler", kindHPA, "web"},
		{"autoscalers.autoscaling.ebbflow.dev/web", "", kindAutoscaler, "web"},
		{"eas/web", "autoscaler", kindAutoscaler, "web"},
	}
	for _, tt := range tests {
		kind, name, err := parseTarget(tt.arg, tt.kind)
		if err != nil || kind != tt.wantKind || name != tt.wantName {
			t.Errorf("parseTarget(%q, %q) = %q, %q, %v; want %q, %q", tt.arg, tt.kind, kind, name, err, tt.wantKind, tt.wantName)
		}
	}
	for _, tt := range [][2]string{{"a/b/c", ""}, {"", ""}, {"web", "deployment"}, {"/web", ""}} {
		if _, _, err := parseTarget(tt[0], tt[1]); err == nil {
			t.Errorf("parseTarget(%q, %q) succeeded", tt[0], tt[1])
		}
	}
}

// TestMainCanceled: an interrupted explain (context canceled) ends without a
// stack trace.
func TestRunCanceled(t *testing.T) {
	fc := newFakeCluster(autoscaler("shop", "web", scaledUpRecord()))
	root := rootFor(fc)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	root.SetArgs([]string{"explain", "-n", "shop", "web", "--watch"})
	var out bytes.Buffer
	root.SetOut(&out)
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("explain --watch with a canceled context: %v", err)
	}
}
