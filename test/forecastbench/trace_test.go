package forecastbench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeTrace(t *testing.T, rows string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "trace.csv")
	if err := os.WriteFile(f, []byte("unix_seconds,value\n"+rows), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Resample interpolates between samples an interval apart and leaves a
// longer gap empty; Scaled maps the peak.
func TestResample(t *testing.T) {
	// 0 at 0 s, 60 at 120 s (interpolated every 60 s), then a gap of 360 s
	// (more than 2×120 s) before 30 at 480 s.
	f := writeTrace(t, "1000,0\n1120,60\n1480,30\n")
	g, err := Resample(Trace{File: f, Interval: 2 * time.Minute}, time.Minute, 9*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	want := []float64{0, 30, 60, nan, nan, nan, nan, nan, 30}
	if len(g.Values) != len(want) || !g.Start.Equal(time.Unix(1000, 0)) {
		t.Fatalf("grid %+v", g)
	}
	for i, w := range want {
		if v := g.Values[i]; math.IsNaN(w) != math.IsNaN(v) || !math.IsNaN(w) && v != w {
			t.Errorf("value %d: %v, want %v", i, v, w)
		}
	}
	if s := g.Scaled(4000); s.Values[2] != 4000 || s.Values[1] != 2000 || !math.IsNaN(s.Values[3]) {
		t.Errorf("scaled %v", s.Values)
	}
}

func TestLoadRejects(t *testing.T) {
	for _, c := range []struct{ rows, says string }{
		{"1000,1\n1000,2\n", "not sorted"},
		{"1000,1\nx,2\n", "want unix_seconds,value"},
		{"1000,NaN\n", "want unix_seconds,value"},
		{"1000,1\n", "fewer than two samples"},
	} {
		_, err := Resample(Trace{File: writeTrace(t, c.rows), Interval: time.Minute}, time.Minute, time.Hour)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want %q", c.rows, err, c.says)
		}
	}
}
