package pngplot

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func TestWritePNG(t *testing.T) {
	p := NewPanel("replicas", "s", "replicas")
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 1}, {X: 10, Y: 4}, {X: 20, Y: 2}})
	if err != nil {
		t.Fatal(err)
	}
	Style(l, 0, true, true)
	if l.StepStyle != plotter.PostStep || len(l.Dashes) == 0 {
		t.Errorf("style: step %v, dashes %v", l.StepStyle, l.Dashes)
	}
	p.Add(l)
	path := filepath.Join(t.TempDir(), "sub", "pngplot.png")
	if err := WritePNG(path, 4*vg.Inch, 3*vg.Inch, []*plot.Plot{p, NewPanel("empty", "x", "y")}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Errorf("image %v", b)
	}
	if r, g, b, _ := img.At(1, 1).RGBA(); r != 0xffff || g != 0xffff || b != 0xffff {
		t.Error("background is not white")
	}
	if err := WritePNG(filepath.Join(path, "x.png"), vg.Inch, vg.Inch, nil); err == nil {
		t.Error("wrote below a file")
	}
}
