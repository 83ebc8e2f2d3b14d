package proc

import (
	"bufio"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStopKillsTheWholeGroup(t *testing.T) {
	// The shell ignores SIGTERM and leaves a grandchild in the group.
	cmd := exec.Command("sh", "-c", `trap "" TERM; sleep 300 & echo $!; wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("grandchild pid not printed: %v", err)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	if p.Exited() {
		t.Fatal("exited before Stop")
	}
	p.Stop(200 * time.Millisecond)
	if !p.Exited() || p.Err() == nil {
		t.Fatalf("after Stop: exited %v, err %v (want a kill status)", p.Exited(), p.Err())
	}
	// The grandchild was in the group: it must be gone (ESRCH) soon.
	for time.Now().Before(deadline) {
		if err := syscall.Kill(grandchild, 0); errors.Is(err, syscall.ESRCH) {
			p.Stop(time.Millisecond) // repeated Stop is harmless
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("grandchild %d still alive after Stop", grandchild)
}

func TestStartError(t *testing.T) {
	if _, err := Start(exec.Command("/nonexistent/binary")); err == nil {
		t.Fatal("want an error")
	}
}
