package forecastbench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	simsource "github.com/ebbflow/ebbflow/autoscaler/simulate/source"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// Metric is the series every trace is backfilled as, one per trace label.
const Metric = "trace_requests_per_second"

// Rules is the adapter rule file that serves the traces as an external
// metric.
const Rules = `
externalRules:
- seriesQuery: 'trace_requests_per_second{trace!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (trace)'
`

// Placed is a grid shifted in time, as backfilled.
type Placed struct {
	Name string
	Grid
}

// Place shifts g so that its last value is at end.
func Place(name string, g Grid, end time.Time) Placed {
	g.Start = end.Add(-time.Duration(len(g.Values)-1) * g.Step)
	return Placed{Name: name, Grid: g}
}

// Backfill writes the placed traces as OpenMetrics (values to the
// thousandth, gaps left out) and turns them into TSDB blocks in dataDir
// with promtool, as an operator backfills history.
func Backfill(tmp, dataDir string, traces []Placed) error {
	file := filepath.Join(tmp, "traces.om")
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# TYPE %s gauge\n", Metric)
	for _, p := range traces {
		for i, v := range p.Values {
			if !math.IsNaN(v) {
				fmt.Fprintf(w, "%s{trace=%q} %.3f %d\n", Metric, p.Name, v, p.Start.Add(time.Duration(i)*p.Step).Unix())
			}
		}
	}
	fmt.Fprintln(w, "# EOF")
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return promtest.BackfillFile(context.Background(), file, dataDir, promtest.BackfillOptions{MaxBlockDuration: 31 * 24 * time.Hour})
}

// Retention is the Prometheus retention the backfilled history needs:
// longer than the traces.
const Retention = 3650 * 24 * time.Hour

// ExternalMetric is the metric of trace name at target per pod.
func ExternalMetric(name string, target float64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: Metric, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"trace": name}}},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType,
			AverageValue: resource.NewMilliQuantity(int64(math.Round(target*1000)), resource.DecimalSI)},
	}}
}

// Read reads trace p back from the Prometheus at url on a grid of step
// over its span, with `ebbflow simulate`'s reader (Rules through the
// adapter's code, query_range).
func Read(ctx context.Context, url string, p Placed, step time.Duration) (simulate.Series, error) {
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.ParseWith([]byte(Rules), rules.Options{Mapper: mapper})
	if err != nil {
		return simulate.Series{}, err
	}
	conn := prom.NewConnectionOptions(url)
	conn.PrometheusTimeout = 2 * time.Minute
	client, err := conn.Client()
	if err != nil {
		return simulate.Series{}, err
	}
	end := p.Start.Add(time.Duration(len(p.Values)-1) * p.Step)
	reader, err := simsource.New(simsource.Options{Rules: set, Client: client, Mapper: mapper,
		Range: simsource.Range{Start: p.Start, End: end, Step: step}, Timeout: conn.PrometheusTimeout})
	if err != nil {
		return simulate.Series{}, err
	}
	if err := reader.Check(ctx); err != nil {
		return simulate.Series{}, err
	}
	return reader.Series(ctx, ExternalMetric(p.Name, 1), simsource.Query{})
}
