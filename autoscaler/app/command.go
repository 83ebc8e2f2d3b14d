package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/internal/buildinfo"
)

// NewCommand returns the ebbflow-autoscaler command; it runs until ctx ends.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:          "ebbflow-autoscaler",
		Short:        "Scale workloads from the standard metrics APIs, with kube-controller-manager's HPA decisions",
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := logsapi.ValidateAndApply(o.Logs, nil); err != nil {
				return fmt.Errorf("logging: %w", err)
			}
			cfg, err := o.Config()
			if err != nil {
				return err
			}
			logger := klog.FromContext(ctx).WithName("ebbflow-autoscaler")
			return cfg.Complete().Run(klog.NewContext(ctx, logger))
		},
	}
	o.AddFlags(cmd.Flags())
	buildinfo.AddVersionFlag(cmd)
	return cmd
}
