package main

import (
	"time"

	"github.com/ebbflow/ebbflow/test/fakeapp"
)

// Names in manifests/examples.
const (
	namespace = "ebbflow-demo"
	queueName = "orders"
	// consumePerWorker is how many messages per second each worker drains.
	consumePerWorker = 10
)

// workloads are the example Deployments (and their HPAs, or for
// web-ebbflow its Autoscaler, of the same name) in table and plot order.
var workloads = []string{"web", webEbbflow, "api", "worker"}

// webEbbflow is the copy of web scaled by an ebbflow Autoscaler (run by
// ebbflow-autoscaler) with the spec of web's HPA (run by
// kube-controller-manager). The other workloads have HPAs.
const webEbbflow = "web-ebbflow"

// shape returns the traffic shape of a profile lasting d with the given base
// and peak: a short lead at the base, ramp up, plateau, ramp down and a tail
// at the base long enough for scale-down.
func shape(d time.Duration, base, peak float64) fakeapp.Shape {
	frac := func(f float64) time.Duration { return time.Duration(float64(d) * f).Round(time.Second) }
	s := fakeapp.Shape{Base: base, Peak: peak,
		Lead: frac(0.06), RampUp: frac(0.22), Plateau: frac(0.28), RampDown: frac(0.16)}
	s.Tail = d - s.Lead - s.RampUp - s.Plateau - s.RampDown
	return s
}

// scenario returns what the fake app plays: web and api requests and orders
// produced, all following the same shape scaled to their own peak, and
// web-ebbflow requests exactly as web's.
func scenario(o options) (services []fakeapp.Service, queues []fakeapp.Queue) {
	services = []fakeapp.Service{
		{Namespace: namespace, Selector: "app=web", Service: "web", Rate: shape(o.duration, 5, o.peak).Profile()},
		{Namespace: namespace, Selector: "app=" + webEbbflow, Service: webEbbflow, Rate: shape(o.duration, 5, o.peak).Profile()},
		{Namespace: namespace, Selector: "app=api", Service: "api", Rate: shape(o.duration, 5, 0.75*o.peak).Profile()},
	}
	queues = []fakeapp.Queue{{
		Name: queueName, Namespace: namespace, Selector: "app=worker",
		Produce: shape(o.duration, 5, 0.6*o.peak).Profile(), ConsumePerPod: consumePerWorker,
	}}
	return services, queues
}
