// Package demotest checks that `make demo` on the real node tears down when
// it is interrupted as users and CI runners interrupt it: a Ctrl-C (SIGINT to
// the whole foreground process group) and a SIGTERM to make alone. After
// make exits nothing of the run is left on the machine (processes, mounts,
// cgroups, iptables chains, interfaces, CNI cache entries, kernel settings)
// and the real-node lock is free.
//
// It needs root and the machine's real-node lock, which the demo itself
// takes; it runs in `make test-e2e` (docs/real-node.md).
package demotest
