// Command kubectl-ebbflow is the ebbflow command as a kubectl plugin: with
// this binary on PATH, "kubectl ebbflow explain -n NS NAME" runs it.
package main

import (
	"os"

	"github.com/ebbflow/ebbflow/cli"
)

func main() { os.Exit(cli.Main(cli.NewPluginCommand())) }
