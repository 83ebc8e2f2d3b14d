//go:build adapterbench

package adapterbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/ebbflow/ebbflow/test/benchcluster"
)

// clients reach the custom metrics API of one identity through
// kube-apiserver and straight on the adapter's port, and Prometheus.
type clients struct {
	api, direct, prom          *http.Client
	apiURL, directURL, promURL string
}

// target is one request, one way.
type target struct {
	name string
	hc   *http.Client
	url  string
}

func newClientsFor(cfg *rest.Config, adapterURL string, adapterCA []byte, promURL string) (*clients, error) {
	api, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver client: %w", err)
	}
	dcfg := rest.CopyConfig(cfg)
	dcfg.Host = adapterURL
	dcfg.CAFile, dcfg.CAData = "", adapterCA
	direct, err := rest.HTTPClientFor(dcfg)
	if err != nil {
		return nil, fmt.Errorf("adapter client: %w", err)
	}
	prom := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8}}
	return &clients{api: api, direct: direct, prom: prom,
		apiURL: strings.TrimSuffix(cfg.Host, "/"), directURL: adapterURL, promURL: promURL}, nil
}

const metricsPath = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/" + benchNS + "/pods/"

// paths are the requests measured: `*` and one pod, each through
// kube-apiserver and straight on the adapter's port.
func (c *clients) paths(pod string) []target {
	all, one := metricsPath+"*/"+benchMetric, metricsPath+pod+"/"+benchMetric
	return []target{
		{"* via kube-apiserver", c.api, c.apiURL + all},
		{"* direct", c.direct, c.directURL + all},
		{"one pod via kube-apiserver", c.api, c.apiURL + one},
		{"one pod direct", c.direct, c.directURL + one},
	}
}

// get returns the body of a GET answered 200.
func get(ctx context.Context, hc *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.300s", u, resp.Status, body)
	}
	return body, nil
}

// items counts the items of a metric value list.
func items(body []byte) (int, error) {
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(body, &list); err != nil {
		return 0, fmt.Errorf("decode metric list: %w", err)
	}
	return len(list.Items), nil
}

// waitServing waits until a `*` request through kube-apiserver answers a
// value for each of the pods.
func (c *clients) waitServing(ctx context.Context, pods int, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		body, err := get(ctx, c.api, c.paths("")[0].url)
		if err != nil {
			last = err
			return false, nil
		}
		n, err := items(body)
		if err != nil {
			return false, err
		}
		last = fmt.Errorf("%d of %d pods answered", n, pods)
		return n == pods, nil
	})
	if err != nil {
		return fmt.Errorf("adapter serving every pod: %w (last: %v)", err, last)
	}
	return nil
}

// scrape reads and parses a /metrics page.
func scrape(ctx context.Context, hc *http.Client, u string) (benchcluster.Scrape, error) {
	body, err := get(ctx, hc, u+"/metrics")
	if err != nil {
		return nil, err
	}
	return benchcluster.ParseScrape(string(body))
}

// snapshot is the adapter's and Prometheus' /metrics at one moment.
type snapshot struct{ adapter, prom benchcluster.Scrape }

func (c *clients) snapshot(ctx context.Context) (snapshot, error) {
	a, err := scrape(ctx, c.direct, c.directURL)
	if err != nil {
		return snapshot{}, fmt.Errorf("adapter metrics: %w", err)
	}
	p, err := scrape(ctx, c.prom, c.promURL)
	if err != nil {
		return snapshot{}, fmt.Errorf("prometheus metrics: %w", err)
	}
	return snapshot{a, p}, nil
}

// measurePath sends n sequential requests of p after a few to warm up, and
// reads what the adapter and Prometheus observed meanwhile.
func (c *clients) measurePath(ctx context.Context, p target, n int) (Path, error) {
	for range 5 {
		if _, err := get(ctx, p.hc, p.url); err != nil {
			return Path{}, err
		}
	}
	before, err := c.snapshot(ctx)
	if err != nil {
		return Path{}, err
	}
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := get(ctx, p.hc, p.url); err != nil {
			return Path{}, err
		}
		ds = append(ds, time.Since(t0))
	}
	after, err := c.snapshot(ctx)
	if err != nil {
		return Path{}, err
	}
	return Path{
		Name:    p.name,
		Latency: Summarize(ds),
		Handler: MeanBetween(before.adapter, after.adapter, "apiserver_request_duration_seconds", map[string]string{"group": "custom.metrics.k8s.io"}),
		Query:   MeanBetween(before.prom, after.prom, "prometheus_http_request_duration_seconds", map[string]string{"handler": "/api/v1/query"}),
		Backend: MeanBetween(before.adapter, after.adapter, "ebbflow_adapter_prometheus_request_duration_seconds", nil),
	}, nil
}

// throughput runs clients concurrent loops of `*` requests through
// kube-apiserver for window and returns the answered requests per second
// and the number of failed ones.
func (c *clients) throughput(ctx context.Context, clients int, window time.Duration) (float64, int) {
	u := c.paths("")[0].url
	var ok, failed atomic.Int64
	ctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := get(ctx, c.api, u); err == nil {
					ok.Add(1)
				} else if ctx.Err() == nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / time.Since(start).Seconds(), int(failed.Load())
}

// timePromQL sends query to Prometheus' /api/v1/query n times (after a
// check that it answers want samples) and returns the durations.
func timePromQL(ctx context.Context, promURL, query string, want, n int) ([]time.Duration, error) {
	u := promURL + "/api/v1/query?" + url.Values{"query": {query}}.Encode()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}
	body, err := get(ctx, hc, u)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Data struct{ Result []json.RawMessage }
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("decode query answer: %w", err)
	}
	if len(answer.Data.Result) != want {
		return nil, fmt.Errorf("query answered %d samples, want %d", len(answer.Data.Result), want)
	}
	ds := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := get(ctx, hc, u); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t0))
	}
	return ds, nil
}
