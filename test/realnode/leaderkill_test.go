package realnode

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// leaseDuration is the chart's autoscaler.leaderElection.leaseDuration: a
// leader that dies without releasing the Lease keeps it that long after its
// last renewal (every retry period, 2 s).
const leaseDuration = 15 * time.Second

// testLeaderKilled kills the process of the leader's container with SIGKILL
// — no grace, no release of the Lease, as the OOM killer or a crashed node
// would — and checks the handover as testLeaderHandover does (handOver: no
// double write). The Lease must change hands only once it expired (proof
// that the leader did not release it, i.e. that it died without grace), and
// the kubelet must restart the container (exit code 137) into a standby.
func testLeaderKilled(ctx context.Context, t *testing.T) {
	var killed container
	var restarts int32
	took := handOver(ctx, t, "SIGKILL of", func(ctx context.Context, t *testing.T, pod string) {
		p, err := env.C.Client().CoreV1().Pods(chartNS).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		killed = runningContainer(ctx, t, *p, "autoscaler")
		if err := syscall.Kill(killed.pid, syscall.SIGKILL); err != nil {
			t.Fatalf("SIGKILL %v: %v", killed, err)
		}
		t.Logf("SIGKILL to %v", killed)
	})
	// The Lease is renewed every 2 s, so it expires at least 13 s after the
	// kill; a released one changes hands within a retry period or two.
	if took < leaseDuration-5*time.Second {
		t.Errorf("the Lease changed hands %v after the SIGKILL, before it could expire (%v after its last renewal): was it released?",
			took.Round(100*time.Millisecond), leaseDuration)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.C.Client().CoreV1().Pods(chartNS).Get(ctx, killed.pod, metav1.GetOptions{})
		if err != nil {
			return false, err // the pod must stay: only its container died
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name != killed.name {
				continue
			}
			last = fmt.Sprintf("restarts %d, ready %v, last termination %+v", s.RestartCount, s.Ready, s.LastTerminationState.Terminated)
			term := s.LastTerminationState.Terminated
			return s.RestartCount > restarts && s.Ready && term != nil && term.ExitCode == 137, nil
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("%v: want it restarted by the kubelet after exit code 137 (SIGKILL) and Ready; %v; %s", killed, err, last)
	}
}
