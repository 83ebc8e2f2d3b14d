// Package backgroundcpu tests hack/background-cpu.sh, which runs the checks of
// `make test TEST_STREAMS=2` in a CPU cgroup of their own with a low weight
// beside the real node's tests, and removes the group afterwards.
package backgroundcpu
