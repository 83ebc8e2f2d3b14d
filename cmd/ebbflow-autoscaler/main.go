// Command ebbflow-autoscaler scales workloads from the standard metrics APIs
// with kube-controller-manager's HorizontalPodAutoscaler decisions.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/ebbflow/ebbflow/autoscaler/app"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
