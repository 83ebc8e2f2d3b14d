package discovery_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

var benchSizes = []struct {
	name string
	n    int
}{{"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}}

// BenchmarkDiscovery lists n synthetic series from a streaming fake Prometheus over
// loopback HTTP. path=streamed is the adapter's relist (prom.HTTPClient ->
// Discoverer.Relist with the Helm default rules); path=naive decodes the same
// answers with client_golang's v1 API Series (whole body, then []model.LabelSet),
// as prometheus-adapter does, and keeps them until every query is answered.
//
// Besides the standard figures it reports, as the largest increase over a post-GC
// baseline sampled every millisecond during an op (max over the ops of a run):
// peak-heap-bytes, heap objects live or not yet collected (what the process holds,
// including garbage the GC pacer lets accumulate), and peak-live-bytes, heap marked
// live by a GC during the op (what the relist itself retains); and series/op.
func BenchmarkDiscovery(b *testing.B) {
	rules := benchRuleSet(b)
	for _, size := range benchSizes {
		srv := seriesServer(b, size.n)
		b.Run("series="+size.name+"/path=streamed", func(b *testing.B) {
			benchStreamed(b, srv, rules)
		})
		b.Run("series="+size.name+"/path=naive", func(b *testing.B) {
			benchNaive(b, srv, rules)
		})
	}
}

func benchStreamed(b *testing.B, srv *httptest.Server, rules []*rules.Rule) {
	client, err := prom.NewHTTPClient(srv.URL, srv.Client(), prom.VerbGET)
	if err != nil {
		b.Fatal(err)
	}
	d, err := discovery.New(discovery.Options{
		Client: client, Scope: discovery.MapperScope{Mapper: rulefile.DefaultRESTMapper()},
		MaxAge: 10 * time.Minute, Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		b.Fatal(err)
	}
	d.SetRules(rules)
	ctx := context.Background()
	var peak heapPeak
	for b.Loop() {
		peak = peak.max(measurePeak(b, func() {
			if err := d.Relist(ctx); err != nil {
				b.Fatal(err)
			}
		}))
	}
	custom, external := d.Registry().Len()
	if custom == 0 || external == 0 {
		b.Fatalf("registry has %d custom and %d external entries, want both", custom, external)
	}
	peak.report(b)
	b.ReportMetric(float64(d.Registry().SeriesSeen()), "series/op")
}

func benchNaive(b *testing.B, srv *httptest.Server, rules []*rules.Rule) {
	c, err := api.NewClient(api.Config{Address: srv.URL, Client: srv.Client()})
	if err != nil {
		b.Fatal(err)
	}
	v1 := promv1.NewAPI(c)
	var queries []string
	seen := map[string]bool{}
	for _, r := range rules {
		if q := r.SeriesQuery(); !seen[q] {
			seen[q] = true
			queries = append(queries, q)
		}
	}
	ctx := context.Background()
	var peak heapPeak
	var series int
	for b.Loop() {
		peak = peak.max(measurePeak(b, func() {
			all := make([][]model.LabelSet, 0, len(queries))
			end := time.Now()
			for _, q := range queries {
				sets, _, err := v1.Series(ctx, []string{q}, end.Add(-10*time.Minute), end)
				if err != nil {
					b.Fatal(err)
				}
				all = append(all, sets)
			}
			series = 0
			for _, sets := range all {
				series += len(sets)
			}
		}))
	}
	peak.report(b)
	b.ReportMetric(float64(series), "series/op")
}
