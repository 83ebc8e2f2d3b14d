// Command ebbflow-adapter serves Kubernetes custom and external metrics from Prometheus.
package main

import (
	"os"

	// Root CAs compiled in, used when the system has none: the image holds
	// only this binary, and HTTPS to Prometheus must still verify.
	_ "golang.org/x/crypto/x509roots/fallback"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/ebbflow/ebbflow/adapter/server"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(server.NewCommand(ctx)))
}
