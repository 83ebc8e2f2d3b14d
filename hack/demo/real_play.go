package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/loadgen"
)

// realRequired are the real-node workloads that must scale up and back
// down; the worker must go to zero and wake (judgeZeroWake).
var realRequired = []string{webHPA, webEAS}

// play sends the load, samples the workloads, shows explain, the dry-run
// and the worker's wake as they happen, and judges the run.
func (d *realDemo) play(ctx context.Context, o options, out io.Writer) error {
	profile := webProfile(o.duration, o.peak)
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	results := d.startLoad(loadCtx, profile, o.duration+o.settle)
	fmt.Fprintf(out, "demo: sending real HTTP requests from this host through the Services of %s and %s: %.0f → %.0f req/s over %v (target %d req/s per pod), then up to %v for scale-down\n",
		webHPA, webEAS, baseRPS, o.peak, o.duration, perPodTarget, o.settle)

	start := time.Now()
	ticker := time.NewTicker(o.sampleEvery)
	defer ticker.Stop()
	var (
		samples   []sample
		show      showcase
		lastPrint time.Time
		rows      int
		wakeDone  = make(chan wakeResult, 1)
		wake      *wakeResult
	)
	var playErr error
loop:
	for {
		select {
		case <-ctx.Done():
			playErr = fmt.Errorf("interrupted: %w", ctx.Err())
			break loop
		case w := <-wakeDone:
			wake = &w
			fmt.Fprintln(out, w)
		case now := <-ticker.C:
			s := d.observe(ctx, now.Sub(start), profile)
			samples = append(samples, s)
			if now.Sub(lastPrint) >= o.printEvery-o.sampleEvery/2 {
				if rows%20 == 0 {
					fmt.Fprintln(out, realTableHeader)
				}
				printRealRow(out, s)
				lastPrint, rows = now, rows+1
			}
			show.step(ctx, d, s, out, wakeDone)
			z := judgeZeroWake(samples, worker)
			if s.T >= o.duration && ((settled(samples, realRequired) && z.BackToZero) || s.T >= o.duration+o.settle) {
				break loop
			}
		}
	}
	stopLoad()
	loadRes := <-results
	if wake == nil && show.enqueued {
		select {
		case w := <-wakeDone:
			wake = &w
		default:
		}
	}
	return d.conclude(ctx, o, out, samples, loadRes, wake, show.shown, playErr)
}

// conclude writes the plot and the summary and returns the verdict.
func (d *realDemo) conclude(ctx context.Context, o options, out io.Writer, samples []sample, load map[string]loadResult, wake *wakeResult, sh shown, playErr error) error {
	for _, name := range []string{webHPA, webEAS} {
		r := load[name]
		if r.err != nil && playErr == nil {
			fmt.Fprintf(out, "demo: load on %s: %v\n", name, r.err)
		}
		fmt.Fprintf(out, "demo: load on %-11s sent %d, ok %d, errors %d, dropped %d, p50 %v, p99 %v\n", name, r.Sent, r.OK, r.Errors, r.Dropped,
			r.Latency.P50.Round(100*time.Microsecond), r.Latency.P99.Round(100*time.Microsecond))
	}
	if len(samples) > 1 {
		path := filepath.Join(o.output, "demo.png")
		if err := writePlot(path, samples, realPanels()); err != nil {
			return errors.Join(playErr, err)
		}
		abs, _ := filepath.Abs(path)
		fmt.Fprintf(out, "demo: plot of load and replicas written to %s\n", abs)
	}
	sh.dryRunEvents, sh.dryRunEvError = d.dryRunEvents(ctx)
	fmt.Fprintf(out, "demo: what the dry-run Autoscaler %s would have done to %s (its DryRunRescale events; it never wrote the scale):\n%s", dryRun, webHPA, indent(sh.dryRunEvents))
	if playErr != nil {
		return playErr
	}
	outs, verdictErr := verdict(samples, realRequired, realRequired)
	for _, oc := range outs {
		fmt.Fprintf(out, "demo: %v\n", oc)
	}
	z := judgeZeroWake(samples, worker)
	fmt.Fprintf(out, "demo: %v\n", z)
	if wake != nil {
		fmt.Fprintf(out, "demo: worker zero → wake: %v from the message to spec.replicas ≥ 1, %v to a Ready worker\n", wake.scaled.Round(100*time.Millisecond), wake.ready.Round(100*time.Millisecond))
	}
	printComparison(out, samples, webHPA, webEAS)
	if err := errors.Join(verdictErr, z.err(), judgeParity(samples), judgeLoad(load), judgeShown(sh)); err != nil {
		return err
	}
	fmt.Fprintf(out, "demo: PASS: %s (HPA) and %s (ebbflow Autoscaler) scaled real pods up with the load and back down after it, peaking within a replica of each other; the load was answered; explain showed a real scale-up and the dry-run's would-be decision, and the dry-run recorded %d DryRunRescale events; %s went to zero and woke on a message\n",
		webHPA, webEAS, len(wouldScaleEvents(sh.dryRunEvents)), worker)
	return nil
}

// loadResult is one load generator's result and error.
type loadResult struct {
	loadgen.Result
	err error
}

// startLoad runs a bounded load generator per web Service with profile and
// returns a channel that receives their results once all have ended.
func (d *realDemo) startLoad(ctx context.Context, profile []loadgen.Step, bound time.Duration) <-chan map[string]loadResult {
	done := make(chan map[string]loadResult, 1)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	res := map[string]loadResult{}
	for _, name := range []string{webHPA, webEAS} {
		url := d.urls[name] + "/"
		wg.Go(func() {
			r, err := loadgen.Run(ctx, loadgen.Config{URL: url, Profile: profile, Concurrency: 16, DisableKeepAlives: true,
				Timeout: 3 * time.Second, MaxRequests: maxRequests(profile), MaxDuration: bound})
			mu.Lock()
			res[name] = loadResult{r, err}
			mu.Unlock()
		})
	}
	go func() { wg.Wait(); done <- res }()
	return done
}

// observe samples the offered load, the queue and every watched object.
func (d *realDemo) observe(ctx context.Context, t time.Duration, profile []loadgen.Step) sample {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s := sample{T: t, Load: map[string]float64{}, PerPod: map[string]float64{}, W: map[string]workloadState{}}
	s.Load[webHPA] = rateAt(profile, t)
	s.Load[webEAS] = s.Load[webHPA]
	s.Queue = d.queueDepth(ctx)
	for _, w := range realWorkloads {
		s.W[w.Name] = observeWorkload(ctx, d.cs, realNS, w)
	}
	for _, name := range []string{webHPA, webEAS} {
		if r := s.W[name].Ready; r > 0 {
			s.PerPod[name] = s.Load[name] / float64(r)
		}
	}
	return s
}

var queueGauge = regexp.MustCompile(`(?m)^queue_messages_ready(?:\{[^}]*\})? (\S+)$`)

// queueDepth reads queue_messages_ready from the queue's /metrics (0 when
// it cannot).
func (d *realDemo) queueDepth(ctx context.Context) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.queueURL+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return 0
	}
	m := queueGauge.FindStringSubmatch(b.String())
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// wakeResult is the worker's wake from zero: how long from the messages
// to spec.replicas ≥ 1 and to a Ready worker.
type wakeResult struct {
	messages      int
	scaled, ready time.Duration
	err           error
}

func (w wakeResult) String() string {
	if w.err != nil {
		return fmt.Sprintf("demo: ▶ worker did not wake: %v", w.err)
	}
	return fmt.Sprintf("demo: ▶ worker woke from zero: %d messages enqueued → Autoscaler set replicas ≥ 1 after %v, a worker Ready after %v",
		w.messages, w.scaled.Round(100*time.Millisecond), w.ready.Round(100*time.Millisecond))
}

// wakeWorker enqueues wakeMessages and measures the wake, polling the
// worker's Deployment every 250 ms for up to 2 minutes.
func (d *realDemo) wakeWorker(ctx context.Context) wakeResult {
	w := wakeResult{messages: wakeMessages}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/enqueue?n=%d", d.queueURL, wakeMessages), nil)
	if err != nil {
		w.err = err
		return w
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.err = fmt.Errorf("enqueue: %w", err)
		return w
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.err = fmt.Errorf("enqueue: %s", resp.Status)
		return w
	}
	t0 := time.Now()
	for ctx.Err() == nil {
		dep, err := d.cs.kube.AppsV1().Deployments(realNS).Get(ctx, worker, metav1.GetOptions{})
		if err == nil {
			if w.scaled == 0 && dep.Spec.Replicas != nil && *dep.Spec.Replicas > 0 {
				w.scaled = time.Since(t0)
			}
			if dep.Status.ReadyReplicas > 0 {
				w.ready = time.Since(t0)
				if w.scaled == 0 {
					w.scaled = w.ready
				}
				return w
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	w.err = fmt.Errorf("no Ready worker %v after the messages", time.Since(t0).Round(time.Second))
	return w
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    " + line)
	}
	return b.String()
}
