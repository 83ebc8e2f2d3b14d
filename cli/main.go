package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// NewPluginCommand returns the command tree as the kubectl plugin
// kubectl-ebbflow: the same commands, named "kubectl ebbflow" in help and
// usage.
func NewPluginCommand() *cobra.Command {
	root := NewRootCommand()
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl ebbflow"
	return root
}

// Main runs root until it returns or an interrupt (Ctrl-C) or SIGTERM
// cancels its context, prints an error as one "error: ..." line on stderr
// and returns the exit code: 0 on success, 1 on error.
func Main(root *cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(root.ErrOrStderr(), "error:", err)
		return 1
	}
	return 0
}
