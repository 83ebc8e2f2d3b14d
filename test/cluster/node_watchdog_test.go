package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// dyingRunEnv makes the test binary a run that starts a real node with a
// pod and then dies as a go test timeout ends a test binary (dyingRun).
const dyingRunEnv = "EBBFLOW_TEST_DYING_RUN"

func TestMain(m *testing.M) {
	if os.Getenv(dyingRunEnv) == "1" {
		dyingRun()
	}
	os.Exit(m.Run())
}

// TestRealNodeWatchdogSweepsADeadRun runs a real node with a running pod in
// a child process that then dies without its teardown, as a go test timeout
// ends a test binary (testing's alarm panics: no deferred call, no
// t.Cleanup, no Stop). Its watchdog must sweep at once — before the lock is
// free — so that when this test gets the lock nothing of the dead run is
// left: processes, mounts, cgroups, chains, bridge, owner record, work
// directory, and every kernel setting has its value of before.
func TestRealNodeWatchdogSweepsADeadRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// The machine's settings with no run on it.
	lock, err := acquireNodeLock(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	kernelBefore := sysctlSnapshot(t)
	lock.release()

	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), dyingRunEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var root, dir string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "READY root=%s dir=%s", &root, &dir); err == nil {
			break
		}
	}
	if root == "" {
		_ = cmd.Wait()
		t.Fatalf("the dying run never got its pod running:\n%s", stderr.String())
	}
	// While it runs, it has changed the machine.
	if o, ok := readNodeOwner(); !ok || o.root != root {
		t.Errorf("owner record while the run lives: %+v, want root %s", o, root)
	}
	kernelDuring, _ := readKernelSettings()
	err = cmd.Wait()
	died := time.Now()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "panic: test timed out") {
		t.Fatalf("the run should have died of the timeout's panic (exit 2), got %v:\n%s", err, tail(stderr.String(), 30))
	}

	// The watchdog holds the lock until it has swept.
	lock = holdNodeLock(ctx, t)
	t.Logf("lock free %v after the run died; kernel settings during the run %v", time.Since(died).Round(10*time.Millisecond), kernelDuring)
	assertNodeLeftNothing(t, root)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the dead run's work directory %s is left (%v)", dir, err)
	}
	assertSysctlsUnchanged(t, kernelBefore, sysctlSnapshot(t))
	if log, _ := os.ReadFile(watchdogLogFile); !strings.Contains(string(log), "watchdog: swept") {
		t.Errorf("the watchdog did not sweep; its log:\n%s", log)
	}
}

// dyingRun starts a cluster with the real node and a running pod, prints
// "READY root=<node root> dir=<work directory>" and panics as testing's
// alarm does when a go test times out.
func dyingRun() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{RealNode: true, NoAdapter: true, NoFakeNodes: true, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dying run:", err)
		os.Exit(3)
	}
	pods := c.Client().CoreV1().Pods("default")
	_, err = pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "pause", Image: PauseImage, ImagePullPolicy: corev1.PullNever}},
		},
	}, metav1.CreateOptions{})
	if err == nil {
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, "pause", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, nil
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dying run: pod:", err)
		_ = c.Stop()
		os.Exit(3)
	}
	fmt.Printf("READY root=%s dir=%s\n", c.node.root, c.dir)
	panic("test timed out after 5m0s (as testing's alarm panics)")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
