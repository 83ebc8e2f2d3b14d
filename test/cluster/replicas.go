package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/proc"
)

// LeaderElection are the leader election settings of AutoscalerReplicas.
// Zero durations mean ebbflow-autoscaler's defaults (15s, 10s, 2s).
type LeaderElection struct {
	// Lease names the coordination.k8s.io Lease in the namespace
	// ebbflow-system (the namespace manifests/autoscaler's Role allows).
	Lease                                     string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

func (le LeaderElection) args() []string {
	args := []string{"--leader-elect=true", "--leader-elect-resource-namespace=" + adapterNamespace,
		"--leader-elect-resource-name=" + le.Lease}
	for flag, d := range map[string]time.Duration{
		"--leader-elect-lease-duration": le.LeaseDuration,
		"--leader-elect-renew-deadline": le.RenewDeadline,
		"--leader-elect-retry-period":   le.RetryPeriod,
	} {
		if d > 0 {
			args = append(args, flag+"="+d.String())
		}
	}
	return args
}

// AutoscalerReplica is one ebbflow-autoscaler process of a group under
// leader election, started by StartAutoscalerReplica.
type AutoscalerReplica struct {
	// Identity is its --leader-elect-identity: the Lease's holderIdentity
	// while it leads and the reportingInstance of its events.
	Identity string
	// Component names its log for LogTail.
	Component string
	// HealthURL is its /healthz; /metrics is next to it.
	HealthURL string
	proc      *process
}

// Kill sends SIGKILL (a crash).
func (r *AutoscalerReplica) Kill() { r.proc.Kill() }

// Freeze sends SIGSTOP; Thaw sends SIGCONT.
func (r *AutoscalerReplica) Freeze() { r.proc.Signal(syscall.SIGSTOP) }

// Thaw resumes a frozen replica.
func (r *AutoscalerReplica) Thaw() { r.proc.Signal(syscall.SIGCONT) }

// Exited reports whether the process has ended.
func (r *AutoscalerReplica) Exited() bool { return r.proc.Exited() }

// Stop ends the replica (SIGCONT first, so a frozen one can handle SIGTERM).
func (r *AutoscalerReplica) Stop() {
	r.Thaw()
	r.proc.Stop(stopGrace)
}

// StartAutoscalerReplica starts one more ebbflow-autoscaler with leader
// election on le's Lease and --leader-elect-identity=identity, as
// StartAutoscaler otherwise does (same build, CRD, RBAC and user; sync
// period of kube-controller-manager), and returns once its /healthz answers.
// Its log is LogTail("ebbflow-autoscaler-" + identity). Any number of
// replicas may run; the single StartAutoscaler one must be stopped first if
// it would reconcile the same objects. Stop it with its Stop or with the
// cluster.
func (c *Cluster) StartAutoscalerReplica(ctx context.Context, identity string, le LeaderElection, opts AutoscalerOptions) (*AutoscalerReplica, error) {
	if identity == "" || le.Lease == "" {
		return nil, errors.New("start autoscaler replica: identity and Lease are required")
	}
	opts = opts.withDefaults()
	if err := c.step("ebbflow-autoscaler build, CRD and RBAC", func() error {
		errs := make(chan error, 2)
		go func() { errs <- c.buildAutoscaler(ctx) }()
		go func() { errs <- c.installAutoscalerObjects(ctx) }()
		return errors.Join(<-errs, <-errs)
	}); err != nil {
		return nil, err
	}
	// The Lease exists before any replica, as the chart and the kustomize
	// base ship it: the replicas may only get and update it.
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: le.Lease, Namespace: adapterNamespace}}
	if _, err := c.client.CoordinationV1().Leases(adapterNamespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Lease %s: %w", le.Lease, err)
	}
	ps, err := proc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	args := c.autoscalerCommand(opts, ps[0])
	for i, a := range args {
		if a == "--leader-elect=false" {
			args = append(args[:i:i], args[i+1:]...)
			break
		}
	}
	args = append(args, le.args()...)
	args = append(args, "--leader-elect-identity="+identity)
	name := Autoscaler + "-" + identity
	p, err := c.launch(name, c.autoscalerBinPath(), args)
	if err != nil {
		return nil, err
	}
	r := &AutoscalerReplica{Identity: identity, Component: name, proc: p,
		HealthURL: "http://127.0.0.1:" + strconv.Itoa(ps[0]) + "/healthz"}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	if err := waitFor(ctx, name+" /healthz", autoscalerReadyTimeout, p, func(ctx context.Context) (bool, error) {
		return probe(ctx, hc, r.HealthURL)
	}); err != nil {
		r.Stop()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return r, nil
}
