package cluster

import (
	"fmt"
	"os"
	"syscall"
)

// The real node's disk. Its pods, images and logs live under the run's
// directory, on a machine's shared filesystem; the kubelet taints the node
// DiskPressure (no pod schedules, running ones are evicted) when that
// filesystem's free space falls below its hard eviction threshold.
const (
	// evictionDiskAvailable is the kubelet's nodefs and imagefs hard
	// eviction threshold: absolute, so that a big filesystem with a few GiB
	// free (a CI machine's) does not put the node under pressure, as a
	// percentage of it would (1 % of 250 GiB is 2.5 GiB).
	evictionDiskAvailable = "512Mi"
	// minNodeDiskFree is the free space a real-node run needs before it
	// starts: the threshold above, the images imported and unpacked, the
	// pods' logs and Prometheus' data, with room for what the same machine
	// writes meanwhile (a build, a second checkout).
	minNodeDiskFree = 3 << 30
)

// checkNodeDisk fails, naming the figures, when the filesystem that will
// hold the real node's data (dir) has less than minNodeDiskFree free: the
// run would end with pods Pending on a DiskPressure taint instead.
func checkNodeDisk(dir string) error {
	free, err := diskFree(dir)
	if err != nil {
		return err
	}
	return nodeDiskVerdict(dir, free)
}

// nodeDiskVerdict is checkNodeDisk's decision on a measured free space.
func nodeDiskVerdict(dir string, free uint64) error {
	if free >= minNodeDiskFree {
		return nil
	}
	return fmt.Errorf("the real node needs %.1f GiB free on the filesystem of %s, it has %.1f GiB: "+
		"the kubelet would taint the node DiskPressure below %s and no pod would schedule; free some space "+
		"(old Go build caches: go clean -cache; earlier runs' directories under %s)",
		gib(minNodeDiskFree), dir, gib(free), evictionDiskAvailable, os.TempDir())
}

// diskFree is the space an unprivileged writer may still use on dir's
// filesystem (statfs' f_bavail), in bytes.
func diskFree(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

func gib(b uint64) float64 { return float64(b) / (1 << 30) }
