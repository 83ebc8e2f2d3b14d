package main

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ebbflow/ebbflow/cli/pngplot"
)

// curve is one named line of a panel.
type curve struct {
	name string
	y    func(sample) float64
	step bool // draw as a step function (replica counts)
	dash bool
}

// panel is one stacked chart of the plot.
type panel struct {
	title, ylabel string
	curves        []curve
}

// fakePanels are the fake-node demo's three charts: what is offered, what
// each replica sees against its target, and the replica counts. Colours go
// by position, so web-ebbflow's curves come last and the others keep theirs.
func fakePanels() []panel {
	per := func(w string) func(sample) float64 { return func(s sample) float64 { return s.PerPod[w] } }
	reps := func(w string) func(sample) float64 {
		return func(s sample) float64 { return float64(s.W[w].Replicas) }
	}
	return []panel{
		{"Offered load and queue depth", "per second / messages", []curve{
			{name: "web requests (web-ebbflow: the same)", y: func(s sample) float64 { return s.Load["web"] }},
			{name: "api requests", y: func(s sample) float64 { return s.Load["api"] }},
			{name: "orders produced", y: func(s sample) float64 { return s.Produce }},
			{name: "orders waiting (queue)", y: func(s sample) float64 { return s.Queue }, dash: true},
		}},
		{"Load per replica (HPA targets: web 10/pod, api 20/pod, queue 30/worker)", "per replica", []curve{
			{name: "web req/s per pod", y: per("web")},
			{name: "api req/s per pod", y: per("api")},
			{name: "queue per worker", y: func(s sample) float64 {
				if r := s.W["worker"].Ready; r > 0 {
					return s.Queue / float64(r)
				}
				return s.Queue
			}},
			{name: "web-ebbflow req/s per pod", y: per(webEbbflow), dash: true},
		}},
		{"Replicas (Deployment status): web by kube-controller-manager's HPA, web-ebbflow by ebbflow's Autoscaler", "replicas", []curve{
			{name: "web (HPA)", y: reps("web"), step: true},
			{name: "api", y: reps("api"), step: true},
			{name: "worker", y: reps("worker"), step: true},
			// Last, so that it is drawn over web's line, dashed so web shows through.
			{name: "web-ebbflow (Autoscaler)", y: reps(webEbbflow), step: true, dash: true},
		}},
	}
}

// writePlot draws the panels over the samples into a PNG at path.
func writePlot(path string, samples []sample, ps []panel) error {
	plots := make([]*plot.Plot, len(ps))
	for i, pn := range ps {
		p, err := buildPanel(pn, samples)
		if err != nil {
			return err
		}
		plots[i] = p
	}
	return pngplot.WritePNG(path, 12*vg.Inch, 11*vg.Inch, plots)
}

// buildPanel returns the plot of one panel.
func buildPanel(pn panel, samples []sample) (*plot.Plot, error) {
	p := pngplot.NewPanel(pn.title, "time since the traffic started (s)", pn.ylabel)
	for i, c := range pn.curves {
		xys := make(plotter.XYs, len(samples))
		for j, s := range samples {
			xys[j].X, xys[j].Y = s.T.Seconds(), c.y(s)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plot %q: %w", c.name, err)
		}
		pngplot.Style(l, i, c.step, c.dash)
		p.Add(l)
		p.Legend.Add(c.name, l)
	}
	return p, nil
}
