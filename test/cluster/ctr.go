package cluster

import (
	"context"
	"os"
	"os/exec"
)

// Ctr is Debian's ctr against one containerd: the address of its socket and
// the namespace of the images and containers (the real node's, or those of
// a private containerd a test starts).
type Ctr struct {
	Address, Namespace string
}

// Command is ctr with args, with the system directories on PATH (runc and
// its shim live there), for callers that stream its output or run it in the
// background.
func (c Ctr) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.Address, "--namespace", c.Namespace}, args...)...)
	cmd.Env = append(os.Environ(), sbinPath())
	return cmd
}

// Run runs ctr with args and returns its combined output; the error carries
// the output.
func (c Ctr) Run(ctx context.Context, args ...string) (string, error) {
	return output(c.Command(ctx, args...))
}
