package cli

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/ebbflow/ebbflow/autoscaler/record"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	simsource "github.com/ebbflow/ebbflow/autoscaler/simulate/source"
)

// maxPlotPoints bounds the points of one line (longer replays are thinned).
const maxPlotPoints = 4000

// line is one named curve of a panel.
type line struct {
	name string
	xys  plotter.XYs
	step bool
	// dash draws the line dashed in grey (the target, the actual replicas).
	dash bool
}

// writeSimulationPlot draws, per spec, its metrics against their targets
// (usage ratio, 1 = on target) and the actual and simulated replicas.
func writeSimulationPlot(path string, rs []replayed, rng simsource.Range) error {
	img := vgimg.New(11*vg.Inch, vg.Length(4*len(rs))*vg.Inch)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: 2 * len(rs), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6),
		PadLeft: vg.Points(8), PadRight: vg.Points(8), PadY: vg.Points(10)}
	for i, r := range rs {
		ratio, replicas := simulationLines(r, rng)
		p, err := panelPlot(r.spec.name+": metric / target (1 = on target)", "ratio", ratio)
		if err != nil {
			return err
		}
		p.Draw(tiles.At(dc, 0, 2*i))
		if p, err = panelPlot(r.spec.name+": replicas", "replicas", replicas); err != nil {
			return err
		}
		p.Draw(tiles.At(dc, 0, 2*i+1))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot: %w", err)
	}
	return f.Close()
}

// simulationLines are the usage ratio of each metric (x: hours since the
// start) and the actual and simulated replicas of one replay.
func simulationLines(r replayed, rng simsource.Range) (ratio, replicas []line) {
	steps := r.result.Steps
	every := max(1, len(steps)/maxPlotPoints)
	hours := func(i int) float64 { return float64(i) * rng.Step.Hours() }
	for j, m := range r.spec.spec.HPA.Metrics {
		l := line{name: record.MetricName(m)}
		for i := 0; i < len(steps); i += every {
			if v := steps[i].Ratios[j]; v == v { // not NaN
				l.xys = append(l.xys, plotter.XY{X: hours(i), Y: v})
			}
		}
		ratio = append(ratio, l)
	}
	if n := len(steps); n > 0 {
		ratio = append(ratio, line{name: "target", dash: true, xys: plotter.XYs{{X: 0, Y: 1}, {X: hours(n - 1), Y: 1}}})
	}
	sim := line{name: "simulated", step: true}
	for i := 0; i < len(steps); i += every {
		sim.xys = append(sim.xys, plotter.XY{X: hours(i), Y: float64(steps[i].Replicas)})
	}
	if r.actual != nil {
		act := line{name: "actual", step: true, dash: true}
		for i := 0; i < len(r.actual); i += every {
			if r.actual[i] != simulate.Missing {
				act.xys = append(act.xys, plotter.XY{X: hours(i), Y: float64(r.actual[i])})
			}
		}
		replicas = append(replicas, act)
	}
	return ratio, append(replicas, sim)
}

func panelPlot(title, ylabel string, lines []line) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "hours since the start"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	for i, l := range lines {
		if len(l.xys) == 0 {
			continue
		}
		pl, err := plotter.NewLine(l.xys)
		if err != nil {
			return nil, fmt.Errorf("plot %q: %w", l.name, err)
		}
		pl.Color = plotutil.Color(i)
		pl.Width = vg.Points(1.5)
		if l.step {
			pl.StepStyle = plotter.PostStep
		}
		if l.dash {
			pl.Color = color.Gray{Y: 90}
			pl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(pl)
		p.Legend.Add(l.name, pl)
	}
	return p, nil
}
