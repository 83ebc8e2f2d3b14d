//go:build benchcluster

package benchcluster

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/metricsstub"
)

// Bounds of the set-up steps.
const (
	workloadTimeout = 10 * time.Minute
	resetTimeout    = 5 * time.Minute
)

type runner struct {
	t      *testing.T
	c      *cluster.Cluster
	stub   *metricsstub.Stub
	values *Values
	reads  *ReadLog
	cfg    config
	// hpaOn is whether kube-controller-manager runs its HPA controller.
	hpaOn bool
}

// probe reads a controller's evaluations counter and lag histogram.
type probe struct {
	scrape    func(context.Context) (string, error)
	component string
	evals     string
	lag       string
	lagLabels map[string]string
	// user is the identity whose requests to kube-apiserver are counted.
	user string
}

var (
	kcmProbe = probe{component: cluster.KubeControllerManager,
		evals: "horizontal_pod_autoscaler_controller_reconciliations_total",
		lag:   "workqueue_queue_duration_seconds", lagLabels: map[string]string{"name": "horizontalpodautoscaler"},
		user: KCMHPAUser}
	ebbProbe = probe{component: cluster.Autoscaler,
		evals: "ebbflow_autoscaler_reconcile_duration_seconds", lag: "ebbflow_autoscaler_evaluation_lag_seconds",
		user: EbbflowUser}
)

type snapshot struct {
	at              time.Time
	scrape          Scrape
	proc            ProcSample
	apiserver, etcd ProcSample
	requests        int64
}

func (r *runner) snap(ctx context.Context, p probe) (snapshot, error) {
	text, err := p.scrape(ctx)
	if err != nil {
		return snapshot{}, err
	}
	s, err := ParseScrape(text)
	if err != nil {
		return snapshot{}, err
	}
	pid, err := r.c.Pid(p.component)
	if err != nil {
		return snapshot{}, err
	}
	ps, err := ReadProc(pid)
	if err != nil {
		return snapshot{}, err
	}
	out := snapshot{at: time.Now(), scrape: s, proc: ps, requests: r.stub.Requests()}
	for comp, dst := range map[string]*ProcSample{cluster.KubeAPIServer: &out.apiserver, cluster.Etcd: &out.etcd} {
		pid, err := r.c.Pid(comp)
		if err != nil {
			return snapshot{}, err
		}
		if *dst, err = ReadProc(pid); err != nil {
			return snapshot{}, err
		}
	}
	return out, nil
}

// auditGrace is how long after a window the audit log is read: kube-apiserver
// writes its events asynchronously (batch mode).
const auditGrace = 2 * time.Second

// apiRequests counts, by Category, the requests user sent kube-apiserver
// between two snapshots.
func (r *runner) apiRequests(ctx context.Context, user string, from, to time.Time) (map[string]int, error) {
	if err := sleep(ctx, auditGrace); err != nil {
		return nil, err
	}
	counts, err := CountAuditDir(r.c.AuditLogDir(), []string{user}, from, to)
	if err != nil {
		return nil, err
	}
	return counts.ByCategory(user), nil
}

// start runs ct alone: kube-controller-manager with its HPA controller and
// no ebbflow-autoscaler, or kube-controller-manager without it and
// ebbflow-autoscaler --hpa-mode=all.
func (r *runner) start(ctx context.Context, ct contender) (probe, error) {
	r.c.StopAutoscaler()
	if ct.kcm {
		r.hpaOn = true
		p := kcmProbe
		p.scrape = r.c.ControllerManagerMetrics
		return p, r.c.RestartControllerManager(ctx, cluster.ControllerManagerOptions{Args: ct.args})
	}
	if r.hpaOn {
		if err := r.c.RestartControllerManager(ctx, cluster.ControllerManagerOptions{DisableHPAController: true}); err != nil {
			return probe{}, err
		}
		r.hpaOn = false
	}
	p := ebbProbe
	p.scrape = r.c.AutoscalerMetrics
	return p, r.c.StartAutoscaler(ctx, cluster.AutoscalerOptions{HPAMode: "all", NoAutoscalers: true, Args: ct.args})
}

// stopHPAs leaves no controller on the HPAs.
func (r *runner) stopHPAs(ctx context.Context) error {
	r.c.StopAutoscaler()
	if !r.hpaOn {
		return nil
	}
	r.hpaOn = false
	return r.c.RestartControllerManager(ctx, cluster.ControllerManagerOptions{DisableHPAController: true})
}

// run measures one contender: reset (no controller, every Deployment at 1
// replica, answers steady), start, warm up, then a window between two
// snapshots. In the scaling variant the answers change every sync period
// from the start of the window.
func (r *runner) run(ctx context.Context, ns string, n int, ct contender, scaling bool) (Result, error) {
	r.values.Steady()
	if err := r.stopHPAs(ctx); err != nil {
		return Result{}, err
	}
	if err := resetReplicas(ctx, r.c.Client(), ns); err != nil {
		return Result{}, err
	}
	r.reads.Reset()
	p, err := r.start(ctx, ct)
	if err != nil {
		return Result{}, err
	}
	defer r.c.StopAutoscaler()
	if err := sleep(ctx, r.cfg.warmup); err != nil {
		return Result{}, err
	}
	before, err := r.snap(ctx, p)
	if err != nil {
		return Result{}, err
	}
	var reactions []time.Duration
	var wg sync.WaitGroup
	wctx, stopWatch := context.WithCancel(ctx)
	if scaling {
		r.values.Scale(before.at, syncPeriod)
		wg.Go(func() { reactions = watchReactions(wctx, r.c.Client(), ns, r.values) })
	}
	err = sleep(ctx, r.cfg.window)
	stopWatch()
	wg.Wait()
	if err != nil {
		return Result{}, err
	}
	after, err := r.snap(ctx, p)
	if err != nil {
		return Result{}, err
	}
	api, err := r.apiRequests(ctx, p.user, before.at, after.at)
	if err != nil {
		return Result{}, err
	}
	lag := after.scrape.Histogram(p.lag, p.lagLabels).Sub(before.scrape.Histogram(p.lag, p.lagLabels))
	res := Result{
		Name: ct.name, N: n, SyncPeriod: syncPeriod, Window: after.at.Sub(before.at),
		Evals:  after.scrape.Sum(p.evals, nil) - before.scrape.Sum(p.evals, nil),
		LagP50: lag.Quantile(0.5), LagP99: lag.Quantile(0.99),
		Overruns:     Overruns(r.reads.Snapshot(), syncPeriod, before.at, after.at),
		CPU:          after.proc.CPU - before.proc.CPU,
		RSS:          after.proc.RSS,
		StubRequests: float64(after.requests - before.requests),
		APIRequests:  api,
		APIServerCPU: after.apiserver.CPU - before.apiserver.CPU,
		EtcdCPU:      after.etcd.CPU - before.etcd.CPU,
		Reactions:    reactions,
	}
	r.t.Logf("%s N=%d scaling=%v: %.0f evaluations in %v, %d first-metric reads logged, kube-apiserver requests by %s: %v",
		ct.name, n, scaling, res.Evals, res.Window.Round(time.Second), len(res.Overruns), p.user, api)
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setUp creates the workload of n objects in ns (createWorkload) with
// kube-controller-manager's HPA controller off and, if cfg.setupQPS is set,
// its client rate limit raised, then restarts it with its defaults.
func (r *runner) setUp(ctx context.Context, ns string, n int) (workloadTimes, error) {
	if err := r.stopHPAs(ctx); err != nil {
		return workloadTimes{}, err
	}
	if r.cfg.setupQPS > 0 {
		qps := strconv.Itoa(r.cfg.setupQPS)
		if err := r.c.RestartControllerManager(ctx, cluster.ControllerManagerOptions{DisableHPAController: true,
			Args: []string{"--kube-api-qps=" + qps, "--kube-api-burst=" + qps}}); err != nil {
			return workloadTimes{}, err
		}
	}
	times, err := createWorkload(ctx, r.c, ns, n)
	if err != nil || r.cfg.setupQPS == 0 {
		return times, err
	}
	return times, r.c.RestartControllerManager(ctx, cluster.ControllerManagerOptions{DisableHPAController: true})
}

// workloadTimes says how long createWorkload took: to create the objects,
// and from then until every Deployment reported its replica.
type workloadTimes struct {
	create, ready time.Duration
}

// createWorkload creates namespace ns with n Deployments and their HPAs and
// waits until every Deployment reports 1 replica.
func createWorkload(ctx context.Context, c *cluster.Cluster, ns string, n int) (workloadTimes, error) {
	var times workloadTimes
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return times, err
	}
	t0 := time.Now()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return times, fmt.Errorf("namespace %s: %w", ns, err)
	}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				d, h := Objects(ns, i)
				if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("deployment %s: %w", d.Name, err)
					return
				}
				if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, h, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("hpa %s: %w", h.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return times, err
	}
	times.create = time.Since(t0)
	t1, ready := time.Now(), 0
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, workloadTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready = 0
		for _, d := range list.Items {
			if d.Status.Replicas == 1 {
				ready++
			}
		}
		return ready == n, nil
	})
	times.ready = time.Since(t1)
	if err != nil {
		return times, fmt.Errorf("%d of %d Deployments report their replica after %v: %w", ready, n, times.ready.Round(time.Second), err)
	}
	return times, nil
}

// resetReplicas sets every Deployment of ns back to 1 replica and waits
// until their status says so.
func resetReplicas(ctx context.Context, cs kubernetes.Interface, ns string) error {
	list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, d := range list.Items {
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: ns, ResourceVersion: ""}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
			if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, d.Name, s, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("reset %s: %w", d.Name, err)
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, 2*time.Second, resetTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, d := range list.Items {
			if d.Status.Replicas != 1 || d.Status.ObservedGeneration < d.Generation {
				return false, nil
			}
		}
		return true, nil
	})
}

// watchReactions records, until ctx ends, the time from each metric change
// to the /scale write that answers it (a Deployment's spec.replicas change).
func watchReactions(ctx context.Context, cs kubernetes.Interface, ns string, v *Values) []time.Duration {
	list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	last := map[string]int32{}
	for _, d := range list.Items {
		last[d.Name] = *d.Spec.Replicas
	}
	w, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil
	}
	defer w.Stop()
	var out []time.Duration
	for {
		select {
		case <-ctx.Done():
			return out
		case e, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			d, isDep := e.Object.(*appsv1.Deployment)
			if e.Type != watch.Modified || !isDep || d.Spec.Replicas == nil {
				continue
			}
			if r := *d.Spec.Replicas; r != last[d.Name] {
				last[d.Name] = r
				if lat, ok := v.Reaction(time.Now(), r); ok {
					out = append(out, lat)
				}
			}
		}
	}
}

// deleteNamespace deletes ns (its objects go in the background).
func deleteNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	return cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}
