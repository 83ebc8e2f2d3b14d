package server

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/ebbflow/ebbflow/internal/buildinfo"
)

// NewCommand returns the ebbflow-adapter command; it runs until ctx is done.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "ebbflow-adapter",
		Short: "Serve custom.metrics.k8s.io and external.metrics.k8s.io from Prometheus",
		Long: `ebbflow-adapter is an aggregated API server that answers the Kubernetes custom and
external metrics APIs by translating each request into PromQL through a rule file in
prometheus-adapter's format.`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.Config()
			if err != nil {
				return err
			}
			completed, err := c.Complete()
			if err != nil {
				return err
			}
			return completed.Run(ctx)
		},
	}
	o.AddFlags(cmd.Flags())
	buildinfo.AddVersionFlag(cmd)
	return cmd
}
