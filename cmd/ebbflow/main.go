// Command ebbflow is Ebbflow's user command: check and try rule files, and
// explain the decisions of ebbflow-autoscaler.
package main

import (
	"os"

	"github.com/ebbflow/ebbflow/cli"
)

func main() { os.Exit(cli.Main(cli.NewRootCommand())) }
