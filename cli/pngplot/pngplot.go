// Package pngplot draws the PNG line plots of the ebbflow command and the
// demo with gonum/plot: stacked panels on a white background, one style for
// lines and replica steps.
package pngplot

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// NewPanel returns an empty panel: title, axis labels, y from 0, a grid and
// the legend at the top.
func NewPanel(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	return p
}

// Style gives l the palette colour i; step draws it as a step function
// (replica counts), dash dashed.
func Style(l *plotter.Line, i int, step, dash bool) {
	l.Color = plotutil.Color(i)
	l.Width = vg.Points(1.5)
	if step {
		l.StepStyle = plotter.PostStep
		l.Width = vg.Points(2)
	}
	if dash {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
}

// WritePNG draws the panels stacked in one column on a white width×height
// canvas and writes it as a PNG to path (creating its directory).
func WritePNG(path string, width, height vg.Length, panels []*plot.Plot) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create plot directory: %w", err)
	}
	img := vgimg.New(width, height)
	dc := draw.New(img)
	// Fill the background; vgimg starts transparent.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(8), PadBottom: vg.Points(8),
		PadLeft: vg.Points(8), PadRight: vg.Points(8), PadY: vg.Points(12)}
	for i, p := range panels {
		p.Draw(tiles.At(dc, 0, i))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	return nil
}
