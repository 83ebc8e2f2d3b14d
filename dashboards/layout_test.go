package dashboards

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// TestDashboardQueriesParse fails when a panel's expression is not valid
// PromQL once Grafana's variables are replaced by values of their kind.
func TestDashboardQueriesParse(t *testing.T) {
	vars := strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h",
		"$namespace", "ns", "$autoscaler", "web", "$release", "ebbflow")
	for _, file := range dashboards(t) {
		for _, e := range dashboardExprs(t, file) {
			if _, err := rulefile.ParsePromQL(vars.Replace(e.expr)); err != nil {
				t.Errorf("%s: panel %q: %v", file, e.panel, err)
			}
		}
	}
}

// TestDashboardLayout fails when panels share an id or overlap, or leave
// Grafana's 24-column grid.
func TestDashboardLayout(t *testing.T) {
	type grid struct{ H, W, X, Y int }
	for _, file := range dashboards(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			Panels []struct {
				ID      int    `json:"id"`
				Title   string `json:"title"`
				GridPos grid   `json:"gridPos"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(data, &dash); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		ids := map[int]string{}
		for i, p := range dash.Panels {
			if other, ok := ids[p.ID]; ok {
				t.Errorf("%s: panels %q and %q share id %d", file, other, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
				t.Errorf("%s: panel %q: gridPos %+v outside the grid", file, p.Title, g)
			}
			for _, q := range dash.Panels[:i] {
				o := q.GridPos
				if g.X < o.X+o.W && o.X < g.X+g.W && g.Y < o.Y+o.H && o.Y < g.Y+g.H {
					t.Errorf("%s: panels %q and %q overlap", file, q.Title, p.Title)
				}
			}
		}
	}
}

func dashboards(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards found (%v)", err)
	}
	return files
}
