package main

import (
	"fmt"
	"io"
)

// realTableHeader is printed above the rows of the real-node demo; it
// matches printRealRow's columns. "hpa sees" is the requests per second per
// pod kube-controller-manager's HPA of web-hpa reads through ebbflow-adapter,
// "eas sees" what ebbflow's Autoscaler of web-ebbflow reads.
const realTableHeader = "   time │ req/s each  hpa sees  eas sees │ pods/desired: web-hpa  web-ebbflow │ dry-run would │ queue  worker pods/desired │ conditions (web-hpa web-ebbflow dry-run worker)"

// printRealRow writes one row of the real-node table.
func printRealRow(w io.Writer, s sample) {
	hpa, eas, dry, wk := s.W[webHPA], s.W[webEAS], s.W[dryRun], s.W[worker]
	pair := func(ws workloadState) string { return fmt.Sprintf("%d/%d", ws.Ready, ws.Desired) }
	fmt.Fprintf(w, "%7s │ %10.1f  %8s  %8s │ %20s  %11s │ %13d │ %5.0f  %18s │ %s %s %s %s\n",
		fmtDur(s.T), s.Load[webHPA], hpa.Metric, eas.Metric, pair(hpa), pair(eas), dry.Desired,
		s.Queue, pair(wk), hpa.Cond, eas.Cond, dry.Cond, wk.Cond)
}

// realPanels are the real-node demo's three charts: the offered load and
// the queue, what each pod sees against the target, the replica counts.
func realPanels() []panel {
	spec := func(w string) func(sample) float64 { return func(s sample) float64 { return float64(s.W[w].Spec) } }
	return []panel{
		{"Offered load (each web service) and queue depth", "requests per second / messages", []curve{
			{name: "requests per second to web-hpa and to web-ebbflow", y: func(s sample) float64 { return s.Load[webHPA] }},
			{name: "messages in the queue", y: func(s sample) float64 { return s.Queue }, dash: true},
		}},
		{fmt.Sprintf("Requests per second per pod as the autoscalers read it from ebbflow-adapter (target %d)", perPodTarget), "req/s per pod", []curve{
			{name: "web-hpa (kube-controller-manager's HPA)", y: func(s sample) float64 { return s.W[webHPA].Value }},
			{name: "web-ebbflow (ebbflow Autoscaler)", y: func(s sample) float64 { return s.W[webEAS].Value }, dash: true},
		}},
		{"Replicas (Deployment spec): real pods on the real node", "replicas", []curve{
			{name: "web-hpa (HPA)", y: spec(webHPA), step: true},
			{name: "dry-run Autoscaler on web-hpa: would scale to", y: func(s sample) float64 { return float64(s.W[dryRun].Desired) }, step: true, dash: true},
			{name: "worker (Autoscaler, to zero and back)", y: spec(worker), step: true},
			{name: "web-ebbflow (Autoscaler)", y: spec(webEAS), step: true, dash: true},
		}},
	}
}
