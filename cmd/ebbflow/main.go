// Command ebbflow is Ebbflow's user command: check and try rule files.
package main

import (
	"fmt"
	"os"

	"github.com/ebbflow/ebbflow/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
