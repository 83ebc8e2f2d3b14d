package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ebbflow/ebbflow/test/loadgen"
	"github.com/ebbflow/ebbflow/test/realnode/kit"
)

// Names of the real-node demo: the sample app's namespace and the objects
// in it.
const (
	realNS = "shop"
	// webHPA is scaled by kube-controller-manager's HPA, webEAS by an ebbflow
	// Autoscaler with the same spec, under the same load.
	webHPA, webEAS = "web-hpa", "web-ebbflow"
	// dryRun is a dry-run ebbflow Autoscaler on webHPA's Deployment, with the
	// same spec: it says what it would do next to what the HPA does. It is
	// evaluated every second (the HPA every 5 s), so it sees each change of
	// the load first and records what it would write (DryRunRescale) before
	// the HPA writes it; at the same period it would often find the HPA's
	// write already done, and have nothing to say.
	dryRun = "web-hpa-dryrun"
	// queue is the sample app's queue, worker its consumer, scaled by an
	// ebbflow Autoscaler between 0 and 3.
	queue, worker = "queue", "worker"
)

// The real-node scaling parameters.
const (
	perPodTarget   = 4  // requests per second per web pod
	webMax         = 6  // most web replicas
	downWindow     = 15 // scale-down stabilization, seconds
	cpuPerRequest  = "2ms"
	baseRPS        = 1.0
	wakeMessages   = 60 // messages enqueued to wake the worker
	messageTarget  = 20 // messages per worker
	idleBeforeZero = 20 * time.Second
)

// realWorkloads are the watched objects of the real-node demo in table and
// plot order.
var realWorkloads = []watched{
	{Name: webHPA, Deployment: webHPA},
	{Name: webEAS, Deployment: webEAS, Autoscaler: true},
	{Name: dryRun, Deployment: webHPA, Autoscaler: true},
	{Name: worker, Deployment: worker, Autoscaler: true},
}

// webProfile is the request rate each web service gets: a lead at the
// base, a ramp to peak, a plateau, a ramp down and a tail at the base long
// enough for the scale-down window, in the proportions of the fake-node
// demo's shape.
func webProfile(d time.Duration, peak float64) []loadgen.Step {
	s := shape(d, baseRPS, peak)
	steps := []loadgen.Step{{Duration: s.Lead, RPS: baseRPS}}
	steps = append(steps, loadgen.Ramp(baseRPS, peak, s.RampUp, 6)...)
	steps = append(steps, loadgen.Step{Duration: s.Plateau, RPS: peak})
	steps = append(steps, loadgen.Ramp(peak, baseRPS, s.RampDown, 4)...)
	return append(steps, loadgen.Step{Duration: s.Tail, RPS: baseRPS})
}

// rateAt is the profile's rate at t since its start (0 after its end).
func rateAt(steps []loadgen.Step, t time.Duration) float64 {
	for _, s := range steps {
		if t < s.Duration {
			return s.RPS
		}
		t -= s.Duration
	}
	return 0
}

// maxRequests bounds a load generator running steps: what the profile asks
// for and a quarter more.
func maxRequests(steps []loadgen.Step) int {
	var n float64
	for _, s := range steps {
		n += s.RPS * s.Duration.Seconds()
	}
	return int(n*1.25) + 10
}

// realManifests are the sample app's objects but the worker (which needs
// the queue's address): web-hpa with its HPA, web-ebbflow with its
// Autoscaler of the same spec, the dry-run Autoscaler on web-hpa, and the
// queue.
func realManifests() string {
	spec := func(target string) string { return kit.ScalingSpec(target, perPodTarget, webMax, downWindow) }
	return strings.Join([]string{
		kit.SampleApp(realNS, webHPA, "--mode=serve", "--cpu-per-request="+cpuPerRequest),
		kit.SampleApp(realNS, webEAS, "--mode=serve", "--cpu-per-request="+cpuPerRequest),
		kit.SampleApp(realNS, queue, "--mode=queue"),
		kit.HPA(realNS, webHPA, spec(webHPA)),
		kit.Autoscaler(realNS, webEAS, spec(webEAS)),
		kit.Autoscaler(realNS, dryRun, spec(webHPA)+"  dryRun: true\n  syncPeriodSeconds: 1\n"),
	}, "---\n")
}

// workerManifests are the worker, consuming the queue at queueURL, and its
// Autoscaler: 0..3 replicas on the queue's depth, woken by any message
// (activation 0) and taken to zero once the queue has been empty for
// idleBeforeZero.
func workerManifests(queueURL string) string {
	spec := fmt.Sprintf(`  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %s}
  minReplicas: 0
  maxReplicas: 3
  scaleToZero: {after: %s}
  metrics:
  - type: External
    external:
      metric: {name: queue_messages_ready}
      target: {type: AverageValue, averageValue: "%d"}
    activation: "0"
  behavior:
    scaleDown: {stabilizationWindowSeconds: 0}
`, worker, idleBeforeZero, messageTarget)
	return kit.SampleApp(realNS, worker, "--mode=worker", "--queue-url="+queueURL, "--cpu-per-message=50ms") +
		"---\n" + kit.Autoscaler(realNS, worker, spec)
}
