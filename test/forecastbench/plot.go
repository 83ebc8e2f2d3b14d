package forecastbench

import (
	"fmt"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ebbflow/ebbflow/cli/pngplot"
)

// Panel is one trace and setting's rows, drawn as short pod-hours against
// replica-hours: one line per variant through its targets, the oracle as a
// point.
type Panel struct {
	Title string
	Rows  []Row
}

// WritePlot draws the panels stacked in one PNG at path.
func WritePlot(path string, panels []Panel) error {
	var plots []*plot.Plot
	for _, pn := range panels {
		p := pngplot.NewPanel(pn.Title, "replica-hours", "short pod-hours")
		var order []string
		byVariant := map[string]plotter.XYs{}
		for _, r := range pn.Rows {
			if _, ok := byVariant[r.Variant]; !ok {
				order = append(order, r.Variant)
			}
			byVariant[r.Variant] = append(byVariant[r.Variant], plotter.XY{X: r.ReplicaHours, Y: r.ShortPodSeconds / 3600})
		}
		for i, v := range order {
			xys := byVariant[v]
			slices.SortFunc(xys, func(a, b plotter.XY) int {
				switch {
				case a.X < b.X:
					return -1
				case a.X > b.X:
					return 1
				}
				return 0
			})
			if v == "oracle" {
				s, err := plotter.NewScatter(xys)
				if err != nil {
					return fmt.Errorf("%s: %w", pn.Title, err)
				}
				s.GlyphStyle.Radius = vg.Points(4)
				p.Add(s)
				p.Legend.Add(v, s)
				continue
			}
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return fmt.Errorf("%s: %w", pn.Title, err)
			}
			pngplot.Style(l, i, false, v != "reactive")
			pts.Color = l.Color
			p.Add(l, pts)
			p.Legend.Add(v, l)
		}
		plots = append(plots, p)
	}
	return pngplot.WritePNG(path, vg.Points(900), vg.Points(float64(320*len(plots))), plots)
}
