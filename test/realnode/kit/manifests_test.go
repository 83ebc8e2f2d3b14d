package kit

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "write the golden files of the chart values")

// checkGolden compares got with testdata/name, or writes it there with
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("values differ from %s:\n%s", p, got)
	}
}

// TestChartValues keeps the values the real node's tests and the demo
// install byte for byte.
func TestChartValues(t *testing.T) {
	checkGolden(t, "values-none.yaml", ChartValuesAt("10.0.0.1", 9090, ChartOptions{Rules: SampleAppRules(" []")}))
	checkGolden(t, "values-queue.yaml", ChartValuesAt("10.0.0.1", 9090, ChartOptions{Rules: SampleAppRules(QueueRule)}))
}
