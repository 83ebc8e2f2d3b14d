package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/test/adaptertest"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// dailyRamp is the recorded queue depth at d into the day of the forecast
// (the day starts at the time the forecast is made): 20, then 200 from 5
// minutes to 3 hours (a sharp daily rise, so that the replicas the forecast
// asks for are the same at every step that sees it).
func dailyRamp(d time.Duration) float64 {
	if d >= 5*time.Minute && d < 3*time.Hour {
		return 200
	}
	return 20
}

// historySpec forecasts the orders queue 45 minutes ahead: on the plateau of
// the past days' ramps while the queue still reads 20. Mode Always: this
// test is about the history the forecast reads (a floor held 45 minutes
// ahead of each ramp costs more than the default mode's backtest allows).
const historySpec = `
apiVersion: autoscaling.ebbflow.dev/v1alpha1
kind: Autoscaler
metadata: {name: worker, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: worker}
  minReplicas: 1
  maxReplicas: 50
  metrics:
  - type: External
    external:
      metric:
        name: queue_messages_ready
        selector: {matchLabels: {queue: orders}}
      target: {type: AverageValue, averageValue: "10"}
    forecast: {season: Daily, lead: 45m, mode: Always}
`

// backfillDaily writes queue_messages_ready for the orders queue (the daily
// ramp relative to at) and the emails queue (999) every minute from from to
// at, and turns it into TSDB blocks with promtool.
func backfillDaily(t *testing.T, from, at time.Time, dataDir string) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# TYPE queue_messages_ready gauge\n")
	for ts := from; !ts.After(at); ts = ts.Add(time.Minute) {
		d := ts.Sub(at) % (24 * time.Hour)
		if d < 0 {
			d += 24 * time.Hour
		}
		fmt.Fprintf(&b, "queue_messages_ready{queue=\"orders\"} %g %d\n", dailyRamp(d), ts.Unix())
		fmt.Fprintf(&b, "queue_messages_ready{queue=\"emails\"} 999 %d\n", ts.Unix())
	}
	b.WriteString("# EOF\n")
	if err := promtest.Backfill(context.Background(), b.Bytes(), dataDir, promtest.BackfillOptions{}); err != nil {
		t.Fatal(err)
	}
}

// historyProvider is the adapter's provider over the guarded HTTP client to
// promURL (as the server wires it) with the rules of rulesYAML, discovered.
// It returns the RESTMapper it uses too.
func historyProvider(t *testing.T, promURL, rulesYAML string) (*provider.Provider, apimeta.RESTMapper) {
	t.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.Parse([]byte(rulesYAML), mapper)
	must(t, err)
	reg := prometheus.NewRegistry()
	hc, err := prom.NewHTTPClient(promURL, nil, prom.VerbGET)
	must(t, err)
	guard := adaptertest.Guard(t, hc, prom.GuardOptions{MaxConcurrent: 4, Timeout: 30 * time.Second}, reg)
	disc, err := discovery.New(discovery.Options{Client: guard, Scope: discovery.MapperScope{Mapper: mapper}, MaxAge: time.Hour, Registerer: reg})
	must(t, err)
	disc.SetRules(set.Rules)
	must(t, disc.Relist(ctxFor(t, time.Minute)))
	prov, err := provider.New(provider.Options{Prom: guard, Discovery: disc, Lister: &objfake.Lister{}, Mapper: mapper, Registerer: reg})
	must(t, err)
	return prov, mapper
}

// newHistoryStack is the adapter's provider over the guarded HTTP client (as
// the server wires it) behind custom-metrics-apiserver's handlers, and a
// metrics.REST over them as the autoscaler wires it.
func newHistoryStack(t *testing.T, promURL string) *metrics.REST {
	t.Helper()
	prov, _ := historyProvider(t, promURL, simulateRules)
	srv := httptest.NewServer(apiHandler(t, prov))
	t.Cleanup(srv.Close)
	external, err := externalclient.NewForConfig(&rest.Config{Host: srv.URL})
	must(t, err)
	return metrics.NewREST(nil, nil, external)
}

// TestForecastHistoryAgainstPrometheus backfills four days with a daily
// ramp into a real Prometheus, reads the history through the adapter's
// handlers as the controller does (external.metrics.k8s.io with the
// reserved requirements) and checks that it holds the values `ebbflow
// simulate` reads for the same times, that the forecast made from it equals
// the one made from simulate's values (the same code), and that simulate's
// replay floors the replicas to that forecast.
func TestForecastHistoryAgainstPrometheus(t *testing.T) {
	at := time.Now().Add(-3 * time.Minute).Truncate(time.Minute)
	req := metrics.HistoryRequest{Range: 4*24*time.Hour + time.Hour, Step: time.Minute}
	from := at.Add(-req.Range)
	dir := t.TempDir()
	backfillDaily(t, from.Add(-10*time.Minute), at, filepath.Join(dir, "data"))
	// Four days of history: a retention longer than promtest's default day.
	srv := promtest.Start(t, promtest.Options{Dir: dir, Retention: 30 * 24 * time.Hour})
	client := newHistoryStack(t, srv.URL())

	sel := labels.SelectorFromSet(labels.Set{"queue": "orders"})
	h, err := client.ExternalHistory(ctxFor(t, time.Minute), "default", "queue_messages_ready", sel, req)
	mustf(t, err == nil, "history through the adapter: %v", err)
	mustf(t, h.Step == time.Minute && h.Start.Unix()%60 == 0, "history on a %v grid from %v", h.Step, h.Start)

	specs := writeFile(t, "specs.yaml", []byte(historySpec))
	rules := writeFile(t, "rules.yaml", []byte(simulateRules))
	stdout, stderr, err := runSimulate("-f", specs, "--rules", rules, "--prometheus-url", srv.URL(), "--step", "1m",
		"--start", from.UTC().Format(time.RFC3339), "--end", at.UTC().Format(time.RFC3339), "-o", "json")
	mustf(t, err == nil, "simulate: %v\n%s", err, stderr)
	var got simulateJSON
	mustf(t, json.Unmarshal([]byte(stdout), &got) == nil && len(got.Specs) == 1, "simulate output:\n%.2000s", stdout)
	steps := got.Specs[0].Steps
	mustf(t, len(steps) > 5000, "%d simulate steps", len(steps))

	// Simulate's values as a history, and the same times in the adapter's.
	sim := forecast.Series{Start: steps[0].Time, Step: time.Minute, Values: make([]float64, len(steps))}
	compared := 0
	for i, st := range steps {
		sim.Values[i] = math.NaN()
		if st.Values[0] != nil {
			sim.Values[i] = *st.Values[0]
		}
		k := int(st.Time.Sub(h.Start) / time.Minute)
		if k < 0 || k >= len(h.Values) || st.Values[0] == nil {
			continue
		}
		mustf(t, h.Values[k] == *st.Values[0], "at %s the adapter's history reads %g, simulate %g", st.Time, h.Values[k], *st.Values[0])
		compared++
	}
	mustf(t, compared > 5700, "only %d points compared (adapter: %d from %v; simulate %d from %v)", compared, len(h.Values), h.Start, len(steps), steps[0].Time)

	fr := forecast.Request{Now: at, Lead: 45 * time.Minute, Season: forecast.Daily, Method: forecast.SeasonalMax}
	fa, fs := forecast.Of(h, fr), forecast.Of(sim, fr)
	mustf(t, fa.OK && fs.OK, "forecasts: %+v, %+v", fa, fs)
	mustf(t, fa.Value == fs.Value, "forecast from the adapter's history %g, from simulate's %g", fa.Value, fs.Value)
	mustf(t, fa.Value == 200, "forecast %g, want the past days' plateau 200", fa.Value)
	last := steps[len(steps)-1]
	mustf(t, last.Values[0] != nil && *last.Values[0] == 20, "the queue reads %v at the forecast's time, want 20", deref(last.Values[0]))
	want := int32(math.Ceil(fa.Value / 10))
	mustf(t, last.Replicas == want, "simulate at %s: %d replicas, want the forecast's floor %d (the reactive proposal is 2)", last.Time, last.Replicas, want)
}
