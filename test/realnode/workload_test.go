package realnode

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/loadgen"
	"github.com/ebbflow/ebbflow/test/realnode/kit"
	"github.com/ebbflow/ebbflow/test/realnode/topcheck"
)

// sampleApp is a Deployment of the sample app's HTTP server burning
// cpuPerRequest per request, with a Service (kit.SampleApp).
func sampleApp(name, cpuPerRequest string) string {
	return kit.SampleApp(appNS, name, "--mode=serve", "--cpu-per-request="+cpuPerRequest)
}

// scalingSpec is the same spec for the HPA and the Autoscaler: 4 requests
// per second per pod, 1..6 replicas, a short scale-down window for a test.
func scalingSpec(target string) string {
	return kit.ScalingSpec(target, 4, 6, int(downWindow/time.Second))
}

// downWindow is scalingSpec's scale-down stabilization window.
const downWindow = 15 * time.Second

// testWorkload sends real HTTP requests through the Services of two copies
// of the sample app, one scaled by kube-controller-manager's HPA and one by
// an ebbflow Autoscaler with the same spec, both on the chart-installed
// adapter's http_requests_per_second; and a third on cpu Utilization. All
// scale up under load and back down once it stops; kubectl top agrees with
// the kubelet on CPU and memory, for at least 3 pods, while the load is
// steady.
func testWorkload(ctx context.Context, t *testing.T) {
	manifests := sampleApp("web-hpa", "2ms") + "---\n" + sampleApp("web-ebbflow", "2ms") + "---\n" + sampleApp("web-cpu", "15ms") +
		"---\n" + kit.HPA(appNS, "web-hpa", scalingSpec("web-hpa")) +
		"---\n" + kit.Autoscaler(appNS, "web-ebbflow", scalingSpec("web-ebbflow")) + cpuHPA
	kubectl(ctx, t, manifests, "apply", "-f", "-")
	for _, d := range []string{"web-hpa", "web-ebbflow", "web-cpu"} {
		waitDeploymentReady(ctx, t, appNS, d, 2*time.Minute)
	}

	// 14 requests per second each: 4 pods at 4 per pod (3.5 per pod).
	profile := append(loadgen.Ramp(2, 14, 20*time.Second, 5), loadgen.Step{Duration: 70 * time.Second, RPS: 14})
	var wg sync.WaitGroup
	results := map[string]loadgen.Result{}
	var mu sync.Mutex
	for _, svc := range []string{"web-hpa", "web-ebbflow", "web-cpu"} {
		ip := serviceIP(ctx, t, svc)
		wg.Go(func() {
			r, err := loadgen.Run(ctx, loadgen.Config{URL: "http://" + ip + "/", Profile: profile, Concurrency: 16,
				DisableKeepAlives: true, Timeout: 3 * time.Second, MaxRequests: 5000, MaxDuration: 3 * time.Minute})
			if err != nil {
				t.Errorf("load on %s: %v", svc, err)
			}
			mu.Lock()
			results[svc] = r
			mu.Unlock()
		})
	}
	// Mid-ramp, every adapter pod is killed: while the metrics APIs are
	// away, no HPA or Autoscaler may scale down.
	outage := make(chan adapterOutage, 1)
	go func() { outage <- killAdapterPods(ctx, t, 15*time.Second) }()
	// kubectl top against the kubelet over the adapter's window ending near
	// 80 s (steady load from 20 s, adapter back, the load's end at 90 s),
	// for the pods the kubelet had before that window: the reads start
	// topcheck.Settle before it.
	type topResult struct {
		r   topcheck.Result
		err error
	}
	topDone := make(chan topResult, 1)
	go func() {
		r, err := compareTopDuringLoad(ctx, 80*time.Second-topcheck.Settle-kit.ResourceWindow-5*time.Second)
		topDone <- topResult{r, err}
	}()
	tl := watchReplicas(ctx, []string{"web-hpa", "web-ebbflow", "web-cpu"}, 95*time.Second)
	o := <-outage
	checkNoScaleDownFromOutage(t, tl, o)
	if top := <-topDone; top.err != nil {
		t.Errorf("kubectl top vs kubelet: %v", top.err)
	} else {
		t.Logf("kubectl top vs kubelet /metrics/resource (cpu over %v, memory):\n  %s", kit.ResourceWindow, strings.Join(top.r.Lines, "\n  "))
		if err := top.r.Err(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	for svc, r := range results {
		t.Logf("load on %s: sent %d, ok %d, errors %d, dropped %d, p50 %v, p99 %v", svc, r.Sent, r.OK, r.Errors, r.Dropped, r.Latency.P50, r.Latency.P99)
		if r.OK < r.Sent*9/10 {
			t.Errorf("load on %s: only %d of %d requests answered 2xx", svc, r.OK, r.Sent)
		}
	}
	for _, d := range []string{"web-hpa", "web-ebbflow"} {
		if p := tl.peak(d); p < 3 {
			t.Errorf("%s peaked at %d replicas under 14 requests/s at 4 per pod; want ≥ 3", d, p)
		}
	}
	if p := tl.peak("web-cpu"); p < 2 {
		t.Errorf("web-cpu peaked at %d replicas under real cpu load; want ≥ 2", p)
	}
	// Load stopped: back to one replica through the 15 s scale-down window.
	for _, d := range []string{"web-hpa", "web-ebbflow"} {
		waitReplicas(ctx, t, d, 1, 2*time.Minute)
	}
}

const cpuHPA = `---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web-cpu, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web-cpu}
  minReplicas: 1
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 100}}
`

func serviceIP(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	ip, err := env.ServiceIP(ctx, appNS, name)
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// replicaTimeline is the Deployments' spec.replicas sampled every second.
type replicaTimeline struct {
	at       []time.Time
	replicas []map[string]int32
}

// watchReplicas samples the Deployments' spec.replicas for d.
func watchReplicas(ctx context.Context, names []string, d time.Duration) replicaTimeline {
	var tl replicaTimeline
	end := time.Now().Add(d)
	for time.Now().Before(end) && ctx.Err() == nil {
		now := map[string]int32{}
		for _, n := range names {
			dep, err := env.C.Client().AppsV1().Deployments(appNS).Get(ctx, n, metav1.GetOptions{})
			if err == nil && dep.Spec.Replicas != nil {
				now[n] = *dep.Spec.Replicas
			}
		}
		tl.at = append(tl.at, time.Now())
		tl.replicas = append(tl.replicas, now)
		time.Sleep(time.Second)
	}
	return tl
}

// peak is the most replicas name had.
func (tl replicaTimeline) peak(name string) int32 {
	var p int32
	for _, r := range tl.replicas {
		p = max(p, r[name])
	}
	return p
}

// scaledDown reports the samples between from and to where name had fewer
// replicas than at the sample before.
func (tl replicaTimeline) scaledDown(name string, from, to time.Time) []string {
	var out []string
	for i := 1; i < len(tl.at); i++ {
		if tl.at[i].Before(from) || tl.at[i].After(to) {
			continue
		}
		prev, cur := tl.replicas[i-1][name], tl.replicas[i][name]
		if prev > 0 && cur > 0 && cur < prev {
			out = append(out, fmt.Sprintf("%d→%d at +%v", prev, cur, tl.at[i].Sub(from).Round(time.Second)))
		}
	}
	return out
}

// adapterOutage deletes every ebbflow-adapter pod at once (grace period 0),
// after delay, and measures how long until the APIServices are Available
// again through the replacement pods; that must take at most
// adapterReturnBound.
type adapterOutage struct {
	killed, recovered time.Time
}

// adapterReturnBound bounds the APIServices' return after every adapter pod
// was killed: 2.8–3.6 s in three runs on 2026-11-27 (2 cores shared with
// three other engineers' runs), 5.9–6.1 s on 2026-11-26
// (docs/benchmarks.md); the margin is for a busier machine.
const adapterReturnBound = 30 * time.Second

func killAdapterPods(ctx context.Context, t *testing.T, delay time.Duration) adapterOutage {
	t.Helper()
	select {
	case <-ctx.Done():
		return adapterOutage{}
	case <-time.After(delay):
	}
	list, err := env.C.Client().CoreV1().Pods(chartNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=ebbflow-adapter"})
	if err != nil {
		t.Errorf("list adapter pods: %v", err) // not Fatal: this runs beside the test's goroutine
		return adapterOutage{}
	}
	o := adapterOutage{killed: time.Now()}
	zero := int64(0)
	for _, p := range list.Items {
		if err := env.C.Client().CoreV1().Pods(chartNS).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Errorf("delete adapter pod %s: %v", p.Name, err)
		}
	}
	if _, err := env.WaitAPIServicesAvailable(ctx, 2*time.Minute, kit.AllAPIServices...); err != nil {
		t.Errorf("after every adapter pod was killed: %v", err)
		return o
	}
	o.recovered = time.Now()
	took := o.recovered.Sub(o.killed)
	t.Logf("all %d adapter pods killed mid-ramp: APIServices Available again after %v (bound %v)", len(list.Items), took.Round(100*time.Millisecond), adapterReturnBound)
	if took > adapterReturnBound {
		t.Errorf("APIServices Available again %v after every adapter pod was killed; want ≤ %v", took.Round(100*time.Millisecond), adapterReturnBound)
	}
	return o
}

// checkNoScaleDownFromOutage: from the kill until a full scale-down
// stabilization window after the APIServices' return, no HPA or Autoscaler
// scaled down — web-hpa's and web-ebbflow's window is downWindow; web-cpu's
// is kube-controller-manager's default 5 min, longer than the timeline,
// which is checked to its end. The timeline must cover the shorter window.
func checkNoScaleDownFromOutage(t *testing.T, tl replicaTimeline, o adapterOutage) {
	t.Helper()
	if o.killed.IsZero() || o.recovered.IsZero() {
		return // killAdapterPods failed the test
	}
	if len(tl.at) == 0 {
		t.Error("no replica timeline")
		return
	}
	end := o.recovered.Add(downWindow)
	if last := tl.at[len(tl.at)-1]; last.Before(end) {
		t.Errorf("the replica timeline ends %v before a scale-down window after the adapter's return: cannot check it", end.Sub(last).Round(time.Second))
	}
	for d, until := range map[string]time.Time{"web-hpa": end, "web-ebbflow": end, "web-cpu": tl.at[len(tl.at)-1]} {
		if downs := tl.scaledDown(d, o.killed, until); len(downs) > 0 {
			t.Errorf("%s scaled down between the adapter pods' kill and %v after their return: %v", d, until.Sub(o.recovered).Round(time.Second), downs)
		}
	}
	t.Logf("no scale-down from the kill to %v after the return (web-cpu: to the timeline's end)", downWindow)
}

func waitReplicas(ctx context.Context, t *testing.T, name string, want int32, timeout time.Duration) {
	t.Helper()
	got, err := cluster.WaitReplicas(ctx, env.C.Client(), appNS, name, timeout, func(r int32) bool { return r == want })
	if err != nil {
		t.Errorf("%s: %d replicas after %v, want %d", name, got, timeout, want)
	}
}
