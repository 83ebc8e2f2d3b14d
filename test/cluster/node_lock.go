package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
)

// The machine-wide state of the real node: one real node at a time (the
// lock), and the record of the run that holds it — what it changed on the
// machine and the values before — so that the run's watchdog, the next run
// or `make clean-node` can sweep what a run that died left behind.
const (
	nodeStateDir  = "/run/ebbflow-real-node"
	nodeLockFile  = nodeStateDir + "/lock"
	nodeOwnerFile = nodeStateDir + "/owner" // see nodeOwner.encode
	ipForwardPath = "/proc/sys/net/ipv4/ip_forward"
	cniCacheDir   = "/var/lib/cni/results"
	// nodeCgroup is the kubelet's cgroupRoot in every hierarchy: the pods
	// of the run, and nothing else, live below it.
	nodeCgroup = "ebbflow-node"
)

// nodeLock holds the machine's real-node lock. The lock is a flock of the
// open file: a child that inherits the descriptor (the watchdog) holds it
// too, until both have closed it or one unlocks it.
type nodeLock struct{ f *os.File }

// acquireNodeLock waits for the machine's real-node lock until ctx is done.
func acquireNodeLock(ctx context.Context, log func(string, ...any)) (*nodeLock, error) {
	waited := false
	for {
		l, err := tryNodeLock()
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, errNodeLockHeld) {
			return nil, err
		}
		if !waited {
			log("another run holds the real-node lock %s; waiting", nodeLockFile)
			waited = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the real-node lock: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

var errNodeLockHeld = errors.New("another run holds the real-node lock " + nodeLockFile)

// tryNodeLock takes the lock if it is free, or returns errNodeLockHeld.
func tryNodeLock() (*nodeLock, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the real node needs root (containerd, the kubelet and the pod network); run the tests as root")
	}
	if err := os.MkdirAll(nodeStateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", nodeStateDir, err)
	}
	f, err := os.OpenFile(nodeLockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open real-node lock: %w", err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return &nodeLock{f: f}, nil
	}
	f.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, errNodeLockHeld
	}
	return nil, fmt.Errorf("lock %s: %w", nodeLockFile, err)
}

// release removes the owner record and frees the lock. Calls after the
// first do nothing (the record may be another run's by then).
func (l *nodeLock) release() {
	if l.f == nil {
		return
	}
	_ = os.Remove(nodeOwnerFile)
	l.unlock()
}

// unlock frees the lock, for every holder of the descriptor; calls after the
// first do nothing.
func (l *nodeLock) unlock() {
	if l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// nodeOwner is what a run records of itself while it holds the lock.
type nodeOwner struct {
	root    string            // the node root of the run
	dir     string            // the cluster's work directory
	ownsDir bool              // the run made dir and removes it
	kernel  map[string]string // nodeKernelSettings' values before the run
}

// encode writes the record, one key=value a line:
//
//	root=<node root>
//	dir=<work directory>
//	owns_dir=<true|false>
//	ip_forward=<0|1>              (as runs before the kernel settings read it)
//	sysctl.<name>=<value before>  (each of nodeKernelSettings)
func (o nodeOwner) encode() string {
	var b strings.Builder
	fmt.Fprintf(&b, "root=%s\ndir=%s\nowns_dir=%t\n", o.root, o.dir, o.ownsDir)
	if v, ok := o.kernel["net.ipv4.ip_forward"]; ok {
		fmt.Fprintf(&b, "ip_forward=%s\n", v)
	}
	names := make([]string, 0, len(o.kernel))
	for n := range o.kernel {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "sysctl.%s=%s\n", n, o.kernel[n])
	}
	return b.String()
}

func decodeNodeOwner(data string) (nodeOwner, bool) {
	o := nodeOwner{kernel: map[string]string{}}
	var ipForward string
	for line := range strings.Lines(data) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "root":
			o.root = v
		case "dir":
			o.dir = v
		case "owns_dir":
			o.ownsDir = v == "true"
		case "ip_forward":
			ipForward = v
		default:
			if name, ok := strings.CutPrefix(k, "sysctl."); ok {
				o.kernel[name] = v
			}
		}
	}
	if _, ok := o.kernel["net.ipv4.ip_forward"]; !ok && (ipForward == "0" || ipForward == "1") {
		o.kernel["net.ipv4.ip_forward"] = ipForward
	}
	return o, o.root != ""
}

func readNodeOwner() (nodeOwner, bool) {
	data, err := os.ReadFile(nodeOwnerFile)
	if err != nil {
		return nodeOwner{}, false
	}
	return decodeNodeOwner(string(data))
}

// recordNodeOwner saves the run's node root and directory and the machine's
// kernel settings the run will change, before it changes any.
func recordNodeOwner(root, dir string, ownsDir bool) (nodeOwner, error) {
	kernel, err := readKernelSettings()
	if err != nil {
		return nodeOwner{}, err
	}
	o := nodeOwner{root: root, dir: dir, ownsDir: ownsDir, kernel: kernel}
	if err := os.WriteFile(nodeOwnerFile, []byte(o.encode()), 0o644); err != nil {
		return nodeOwner{}, fmt.Errorf("record real-node owner: %w", err)
	}
	return o, nil
}
