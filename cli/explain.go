package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"

	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
)

// explainOptions are the flags and the dependencies of `ebbflow explain`.
type explainOptions struct {
	config *genericclioptions.ConfigFlags
	kind   string
	output string
	watch  bool

	// clients returns the clientsets and the namespace to read from; tests
	// replace it with fakes.
	clients func() (kubernetes.Interface, ebbclient.Interface, string, error)
	// now is the reader's clock, for the age of a decision.
	now func() time.Time
	// retry bounds re-watching after a watch fails (see follow).
	retry retryPolicy
}

func newExplainCommand() *cobra.Command {
	o := &explainOptions{
		config: genericclioptions.NewConfigFlags(true),
		now:    time.Now,
		retry:  defaultRetry,
	}
	o.clients = o.clientsFromFlags
	return o.command()
}

// command returns the explain command for o; o.config's flags are added to
// it.
func (o *explainOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain [-n NAMESPACE] [autoscaler/|hpa/]NAME",
		Short: "Explain the last decision of an Autoscaler or a drop-in HorizontalPodAutoscaler",
		Long: `explain reads the decision record ebbflow-autoscaler stored with an autoscaling object and
prints what it read (each metric's value, target, sample age and proposal), which proposal
won, each rule that changed it on the way to the desired replicas (tolerance, stabilization,
scaling policies, min/max, pause, dry-run), whether the scale was written, and the
conditions.

NAME is an ebbflow Autoscaler (also autoscaler/NAME or eas/NAME), or with hpa/NAME or
--kind hpa a HorizontalPodAutoscaler that ebbflow-autoscaler evaluates in drop-in mode
(--hpa-mode=all; the record is its autoscaling.ebbflow.dev/last-decision annotation).

Kubeconfig flags are kubectl's. As a kubectl plugin (the binary installed as
kubectl-ebbflow on PATH) it runs as "kubectl ebbflow explain ..."; kubectl wants its
flags after the plugin name there.`,
		Example: `  ebbflow explain -n shop web
  ebbflow explain -n shop hpa/web -o yaml
  kubectl ebbflow explain -n shop web --watch`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0])
			if err != nil {
				return errors.New(oneLine(err.Error()))
			}
			return nil
		},
	}
	o.config.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.kind, "kind", "", "Kind of NAME: autoscaler (default) or hpa")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format: json or yaml print the decision record; empty prints a table")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "Follow decisions as they are made (until interrupted)")
	return cmd
}

// clientsFromFlags builds the clientsets and resolves the namespace from the
// kubeconfig flags, as kubectl does.
func (o *explainOptions) clientsFromFlags() (kubernetes.Interface, ebbclient.Interface, string, error) {
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, "", fmt.Errorf("kubernetes client: %w", err)
	}
	ebb, err := ebbclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, "", fmt.Errorf("ebbflow client: %w", err)
	}
	return kube, ebb, ns, nil
}

// run reads the object and prints its decision, or follows its decisions
// with --watch.
func (o *explainOptions) run(ctx context.Context, out, errOut io.Writer, arg string) error {
	switch o.output {
	case outputTable, outputJSON, outputYAML:
	default:
		return fmt.Errorf("--output must be json or yaml (or unset for a table), not %q", o.output)
	}
	kind, name, err := parseTarget(arg, o.kind)
	if err != nil {
		return err
	}
	kube, ebb, ns, err := o.clients()
	if err != nil {
		return err
	}
	src := newSource(kind, ns, name, kube, ebb)
	v, err := src.get(ctx)
	if err != nil {
		return err
	}
	if o.watch {
		return o.follow(ctx, src, v, out, errOut)
	}
	if v.Record == nil {
		return noDecision(src)
	}
	return o.print(out, v)
}

func noDecision(src source) error {
	return fmt.Errorf("%s has %w: ebbflow-autoscaler has not evaluated it (is it running and reconciling this kind?)",
		src.describe(), errNoDecision)
}

// print writes one decision in the chosen format.
func (o *explainOptions) print(out io.Writer, v decisionView) error {
	if o.output == outputTable {
		_, err := io.WriteString(out, renderTable(v, o.now()))
		return err
	}
	b, err := renderRecord(v.Record, o.output)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}
