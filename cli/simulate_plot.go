package cli

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	simsource "github.com/ebbflow/ebbflow/autoscaler/simulate/source"
	"github.com/ebbflow/ebbflow/cli/pngplot"
)

// maxPlotPoints bounds the points of one line (longer replays are thinned).
const maxPlotPoints = 4000

// line is one named curve of a panel.
type line struct {
	name string
	// segs are the line's pieces: a gap in the data ends one.
	segs []plotter.XYs
	step bool
	// dash draws the line dashed in grey (the target, the actual replicas).
	dash bool
}

// writeSimulationPlot draws, per spec, its metrics against their targets
// (usage ratio, 1 = on target) and the actual and simulated replicas.
func writeSimulationPlot(path string, rs []replayed, rng simsource.Range) error {
	var plots []*plot.Plot
	for _, r := range rs {
		ratio, replicas := simulationLines(r, rng)
		p, err := panelPlot(r.spec.name+": metric / target (1 = on target)", "ratio", ratio)
		if err != nil {
			return err
		}
		plots = append(plots, p)
		if p, err = panelPlot(r.spec.name+": replicas", "replicas", replicas); err != nil {
			return err
		}
		plots = append(plots, p)
	}
	return pngplot.WritePNG(path, 11*vg.Inch, vg.Length(4*len(rs))*vg.Inch, plots)
}

// simulationLines are the usage ratio of each metric (x: hours since the
// start) and the actual and simulated replicas of one replay.
func simulationLines(r replayed, rng simsource.Range) (ratio, replicas []line) {
	steps := r.result.Steps
	every := max(1, len(steps)/maxPlotPoints)
	hours := func(i int) float64 { return float64(i) * rng.Step.Hours() }
	for j, m := range r.spec.spec.HPA.Metrics {
		l := line{name: evaluation.MetricName(m)}
		for i := 0; i < len(steps); i += every {
			l.add(hours(i), steps[i].Ratios[j])
		}
		ratio = append(ratio, l)
	}
	if n := len(steps); n > 0 {
		ratio = append(ratio, line{name: "target", dash: true, segs: []plotter.XYs{{{X: 0, Y: 1}, {X: hours(n - 1), Y: 1}}}})
	}
	sim := line{name: "simulated", step: true}
	for i := 0; i < len(steps); i += every {
		sim.add(hours(i), float64(steps[i].Replicas))
	}
	replicas = append(replicas, sim)
	if r.actual != nil {
		act := line{name: "actual", step: true, dash: true}
		for i := 0; i < len(r.actual); i += every {
			v := math.NaN()
			if r.actual[i] != simulate.Missing {
				v = float64(r.actual[i])
			}
			act.add(hours(i), v)
		}
		replicas = append(replicas, act)
	}
	return ratio, replicas
}

// add appends a point; NaN (no value) ends the current segment.
func (l *line) add(x, y float64) {
	switch {
	case math.IsNaN(y):
		if n := len(l.segs); n > 0 && len(l.segs[n-1]) > 0 {
			l.segs = append(l.segs, nil)
		}
	case len(l.segs) == 0:
		l.segs = []plotter.XYs{{{X: x, Y: y}}}
	default:
		n := len(l.segs) - 1
		l.segs[n] = append(l.segs[n], plotter.XY{X: x, Y: y})
	}
}

func panelPlot(title, ylabel string, lines []line) (*plot.Plot, error) {
	p := pngplot.NewPanel(title, "hours since the start", ylabel)
	for i, l := range lines {
		var legend *plotter.Line
		for _, seg := range l.segs {
			if len(seg) == 0 {
				continue
			}
			pl, err := plotter.NewLine(seg)
			if err != nil {
				return nil, fmt.Errorf("plot %q: %w", l.name, err)
			}
			pngplot.Style(pl, i, l.step, l.dash)
			if l.dash {
				pl.Color = color.Gray{Y: 90}
			}
			p.Add(pl)
			if legend == nil {
				legend = pl
			}
		}
		if legend != nil {
			p.Legend.Add(l.name, legend)
		}
	}
	return p, nil
}
