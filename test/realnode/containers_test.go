package realnode

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// container is a running container of a pod on the real node, as its
// containerd knows it: its ID and the host PID of its process (the image's
// entrypoint, PID 1 of the container).
type container struct {
	pod, name string
	id        string
	pid       int
}

// runningContainer finds the container named name of pod in the node's
// containerd: the ID from the pod's status, the PID from `ctr tasks ls`.
func runningContainer(ctx context.Context, t *testing.T, pod corev1.Pod, name string) container {
	t.Helper()
	c := container{pod: pod.Name, name: name}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name && s.State.Running != nil {
			c.id = strings.TrimPrefix(s.ContainerID, "containerd://")
		}
	}
	if c.id == "" {
		t.Fatalf("pod %s: no running container %s in its status", pod.Name, name)
	}
	out, err := env.C.Ctr(ctx, "tasks", "ls")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == c.id && f[2] == "RUNNING" {
			if c.pid, err = strconv.Atoi(f[1]); err == nil && c.pid > 0 {
				return c
			}
		}
	}
	t.Fatalf("pod %s container %s (%s): no running task in containerd:\n%s", pod.Name, name, c.id, out)
	return c
}

func (c container) String() string { return fmt.Sprintf("%s/%s (pid %d)", c.pod, c.name, c.pid) }
