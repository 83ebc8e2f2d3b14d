// Package realnode tests Ebbflow as its users run it: the images built by
// hack/image imported into the containerd of the local cluster's real node
// (a kubelet, not kwok), the Helm chart installed with helm into namespaces
// that enforce the restricted Pod Security Standard, with the chart's own
// RBAC and nothing of the harness, and the sample application's real pods
// scaled on real HTTP traffic, scraped by Prometheus 3 through
// kubernetes_sd_configs as users' Prometheus finds pods. The install steps
// are test/realnode/kit's, shared with `make demo`.
//
// One cluster serves the package; TestMain starts it. Needs root (the real
// node); `make test-e2e` installs and builds everything it needs.
package realnode

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/test/realnode/kit"
)

// Names the tests use, from the kit.
const (
	release     = kit.Release
	chartNS     = kit.ChartNS
	appNS       = "shop"
	adapterDepl = kit.AdapterDepl
	scalerDepl  = kit.AutoscalerDepl
	apiCustom1  = kit.APICustom1
	apiCustom2  = kit.APICustom2
	apiExternal = kit.APIExternal
	apiResource = kit.APIResource
	apiResV1    = kit.APIResourceV1
)

// env is the package's cluster, set by TestMain and only read by tests.
var env struct {
	*kit.Env
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	e, err := kit.Start(ctx, kit.Options{Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		return 1
	}
	env.Env = e
	code := 1
	defer func() {
		if code != 0 {
			fmt.Fprintln(os.Stderr, e.C.DumpLogs(60))
		}
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "realnode: stop cluster:", err)
			code = 1
		}
	}()
	code = m.Run()
	return code
}
