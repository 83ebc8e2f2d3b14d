// Command ebbflow is Ebbflow's user command: check and try rule files, and
// explain the decisions of ebbflow-autoscaler.
package main

import (
	"os"

	// Root CAs compiled in, used when the system has none: the image holds
	// only this binary, and `ebbflow simulate` reads Prometheus over HTTPS.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/ebbflow/ebbflow/cli"
)

func main() { os.Exit(cli.Main(cli.NewRootCommand())) }
