// Package imagetest runs Ebbflow's container images as users run them: the
// tarballs `make image` writes (hack/image), imported into a private
// containerd (Debian's containerd 1.6 and runc, from hack/install-node.sh) and
// run by `ctr run` with the image's own user, a read-only root filesystem, no
// capabilities and a network namespace of their own (loopback only). Needs
// root. The tests are in imagetest_test.go; containerd_test.go starts and
// removes the private containerd.
package imagetest
