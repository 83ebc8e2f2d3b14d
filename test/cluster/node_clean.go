package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// SweepRealNode sweeps, on demand, what a real-node run that died left on the
// machine and its watchdog could not remove (`make clean-node`, as root): its
// processes, pods, mounts, cgroups, kube-proxy's rules, the guard and the
// bridge, its work directory, and the kernel settings it changed. It never
// touches a run that is alive: while a run (or its watchdog) holds the
// real-node lock it sweeps nothing and says so. Progress goes to log.
func SweepRealNode(ctx context.Context, log io.Writer) error {
	logf := cleanNodeLog(log)
	lock, err := tryNodeLock()
	if errors.Is(err, errNodeLockHeld) {
		return fmt.Errorf("%w: a run is using the real node; it stops its node itself, or its watchdog sweeps when it dies; nothing swept", err)
	}
	if err != nil {
		return err
	}
	defer lock.unlock()
	return sweepRecordedRun(ctx, logf)
}

// cleanNodeLog writes clean-node's progress lines to w.
func cleanNodeLog(w io.Writer) func(string, ...any) {
	return func(format string, args ...any) {
		fmt.Fprintf(w, "%s clean-node: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

// sweepRecordedRun sweeps the run the owner record names and removes the
// record; the caller holds the real-node lock.
func sweepRecordedRun(ctx context.Context, logf func(string, ...any)) error {
	o, ok := readNodeOwner()
	if !ok {
		logf("nothing to sweep: no run left a record in %s", nodeOwnerFile)
		return nil
	}
	logf("sweeping the real node a run left (%s)", o.root)
	if err := sweepDeadRun(ctx, o, logf); err != nil {
		return err
	}
	if err := os.Remove(nodeOwnerFile); err != nil {
		return err
	}
	logf("swept: nothing of that run is left")
	return nil
}
