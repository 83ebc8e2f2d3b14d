// Package cli implements the ebbflow user command: checking and trying rule
// files without a cluster, and explaining the decisions of ebbflow-autoscaler
// from the cluster. Commands write results to the command's output streams and
// return errors; only main decides the exit code.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/ebbflow/ebbflow/internal/buildinfo"
)

// NewRootCommand returns the ebbflow command tree.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "ebbflow",
		Short:         "Work with Ebbflow rule files and decisions",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newConfigCommand())
	root.AddCommand(newProportionalCommand())
	root.AddCommand(newExplainCommand())
	root.AddCommand(newSimulateCommand())
	buildinfo.AddVersionFlag(root)
	return root
}
