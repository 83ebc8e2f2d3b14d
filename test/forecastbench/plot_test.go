package forecastbench

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

func TestWritePlot(t *testing.T) {
	rows := []Row{
		{Variant: "reactive", Target: 1, ReplicaHours: 100, ShortPodSeconds: 7200},
		{Variant: "reactive", Target: 0.8, ReplicaHours: 120, ShortPodSeconds: 3600},
		{Variant: "LevelCorrected", Target: 1, ReplicaHours: 103, ShortPodSeconds: 5400},
		{Variant: "oracle", Target: 1, ReplicaHours: 90},
	}
	path := filepath.Join(t.TempDir(), "curves.png")
	if err := WritePlot(path, []Panel{{Title: "a", Rows: rows}, {Title: "b", Rows: rows}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dy() < 2*img.Bounds().Dx()/3 {
		t.Fatalf("not two stacked panels: %v %v", err, img.Bounds())
	}
}
