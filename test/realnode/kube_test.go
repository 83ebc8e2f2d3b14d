package realnode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ebbflow/ebbflow/test/cluster"
)

// restrictedNamespace creates a namespace whose pods kube-apiserver's Pod
// Security admission holds to the restricted standard.
func restrictedNamespace(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	_, err := env.c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		},
	}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// kubectl runs the pinned kubectl as cluster admin and returns its stdout.
func kubectl(ctx context.Context, t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectlErr(ctx, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func kubectlErr(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, env.c.Kubectl(), append([]string{"--kubeconfig", env.c.AdminKubeconfig()}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// helm runs the pinned Helm in the repository root with its state in a
// temporary directory.
func helm(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, env.helm, append(args, "--kubeconfig", env.c.AdminKubeconfig())...)
	cmd.Dir = env.root
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeFile writes data to a new file in a temporary directory.
func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitDeploymentReady waits until every replica of the Deployment is
// updated, available and Ready, and returns it.
func waitDeploymentReady(ctx context.Context, t *testing.T, ns, name string, timeout time.Duration) *appsv1.Deployment {
	t.Helper()
	d, err := cluster.WaitDeploymentReady(ctx, env.c.Client(), ns, name, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitAPIServicesAvailable waits until each named APIService is Available
// and returns how long that took.
func waitAPIServicesAvailable(ctx context.Context, t *testing.T, timeout time.Duration, names ...string) time.Duration {
	t.Helper()
	t0 := time.Now()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			var s apiService
			if err := getRaw(ctx, "/apis/apiregistration.k8s.io/v1/apiservices/"+n, &s); err != nil {
				last = err.Error()
				return false, nil
			}
			if !s.available() {
				last = fmt.Sprintf("%s: %+v", n, s.Status.Conditions)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("APIServices %v not Available within %v: %s", names, timeout, last)
	}
	return time.Since(t0)
}

// apiService is the part of an APIService the tests read.
type apiService struct {
	Status struct {
		Conditions []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
	} `json:"status"`
}

func (s apiService) available() bool {
	for _, c := range s.Status.Conditions {
		if c.Type == "Available" {
			return c.Status == "True"
		}
	}
	return false
}

// getRaw GETs an API path through kube-apiserver as cluster admin and
// decodes the JSON answer into out.
func getRaw(ctx context.Context, path string, out any) error {
	body, err := env.c.Client().CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: decode: %w", path, err)
	}
	return nil
}

// podsOf lists the pods of a namespace matching selector.
func podsOf(ctx context.Context, t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	list, err := env.c.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
