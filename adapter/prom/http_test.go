package prom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// recorder is a fake Prometheus HTTP API that records what it was sent.
type recorder struct {
	mu       sync.Mutex
	method   string
	rawQuery string
	form     url.Values
	body     string
}

func (r *recorder) handler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := req.ParseForm(); err != nil {
			t.Errorf("parse form: %v", err)
		}
		r.mu.Lock()
		r.method, r.rawQuery, r.form = req.Method, req.URL.RawQuery, req.Form
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(req.URL.Path, "/api/v1/query"):
			io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"a"},"value":[1700000000.5,"42"]}]}}`)
		case strings.HasSuffix(req.URL.Path, "/api/v1/series"):
			io.WriteString(w, r.body)
		case strings.HasSuffix(req.URL.Path, "/api/v1/label/__name__/values"):
			io.WriteString(w, `{"status":"success","data":["a_total","b"]}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
}

func newTestClient(t *testing.T, verb Verb, extraQuery string) (*HTTPClient, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(rec.handler(t))
	t.Cleanup(srv.Close)
	c, err := NewHTTPClient(srv.URL+"/prefix"+extraQuery, srv.Client(), verb)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func TestQueryVerbAndParameters(t *testing.T) {
	long := "sum(rate(x{pod=~\"" + strings.Repeat("pod-abcdefgh|", 1000) + "\"}[1m]))"
	tests := []struct {
		name       string
		verb       Verb
		query      string
		wantMethod string
	}{
		{"short GET stays GET", VerbGET, "up", http.MethodGet},
		{"long GET becomes POST", VerbGET, long, http.MethodPost},
		{"POST always POST", VerbPOST, "up", http.MethodPost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, rec := newTestClient(t, tt.verb, "?dedup=true")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			v, err := c.Query(ctx, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if len(v) != 1 || v[0].Value != 42 || v[0].Metric["pod"] != "a" || v[0].Timestamp.Unix() != 1700000000 {
				t.Fatalf("unexpected vector %v", v)
			}
			if rec.method != tt.wantMethod {
				t.Errorf("method = %s, want %s", rec.method, tt.wantMethod)
			}
			if got := rec.form.Get("query"); got != tt.query {
				t.Errorf("query sent = %.60q, want %.60q", got, tt.query)
			}
			if !strings.Contains(rec.rawQuery, "dedup=true") {
				t.Errorf("address query parameters lost: %q", rec.rawQuery)
			}
			secs, err := strconv.ParseFloat(rec.form.Get("timeout"), 64)
			if err != nil || secs <= 9 || secs > 10 {
				t.Errorf("timeout sent = %q, want the remaining time (~10s)", rec.form.Get("timeout"))
			}
		})
	}
}

func TestQueryWithoutDeadlineSendsNoTimeout(t *testing.T) {
	c, rec := newTestClient(t, VerbGET, "")
	if _, err := c.Query(context.Background(), "up"); err != nil {
		t.Fatal(err)
	}
	if rec.form.Has("timeout") {
		t.Errorf("timeout sent without a deadline: %q", rec.form.Get("timeout"))
	}
}

func TestQueryExpiredDeadline(t *testing.T) {
	c, _ := newTestClient(t, VerbGET, "")
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := c.Query(ctx, "up"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
}

func TestAPIErrors(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantType string
	}{
		{"bad data", 400, `{"status":"error","errorType":"bad_data","error":"parse error"}`, "bad_data"},
		{"not json", 502, `<html>bad gateway</html>`, "http"},
		{"execution", 422, `{"status":"error","errorType":"execution","error":"too many samples"}`, "execution"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c, err := NewHTTPClient(srv.URL, srv.Client(), VerbGET)
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range []func() error{
				func() error { _, err := c.Query(context.Background(), "up"); return err },
				func() error {
					return c.Series(context.Background(), []string{"up"}, time.Time{}, func(string, []string) error { return nil })
				},
			} {
				var apiErr *APIError
				if err := call(); !errors.As(err, &apiErr) || apiErr.Type != tt.wantType || apiErr.StatusCode != tt.status {
					t.Errorf("err = %v, want APIError type %s status %d", err, tt.wantType, tt.status)
				}
			}
		})
	}
}

func TestSeriesStream(t *testing.T) {
	c, rec := newTestClient(t, VerbGET, "")
	rec.body = `{"status":"success","data":[` +
		`{"__name__":"http_requests_total","pod":"a","namespace":"n","service":"s"},` +
		`{"namespace":"n","__name__":"queue_messages_ready","queue":"q"},` +
		` { "__name__" : "esc\u0061ped" , "la\"bel":"v\"x" } ],"warnings":["w"]}`
	type got struct {
		name   string
		labels string
	}
	var all []got
	start := time.Unix(1700000000, 0)
	err := c.Series(context.Background(), []string{`{__name__=~".+"}`, `up`}, start, func(name string, labels []string) error {
		all = append(all, got{name, strings.Join(labels, ",")})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []got{{"http_requests_total", "namespace,pod,service"}, {"queue_messages_ready", "namespace,queue"}, {"escaped", `la"bel`}}
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Errorf("series = %v, want %v", all, want)
	}
	if m := rec.form["match[]"]; len(m) != 2 {
		t.Errorf("match[] = %v", m)
	}
	if rec.form.Get("start") != "1700000000.000" {
		t.Errorf("start = %q", rec.form.Get("start"))
	}
}

func TestSeriesStreamErrors(t *testing.T) {
	tests := []struct{ name, body string }{
		{"truncated", `{"status":"success","data":[{"__name__":"a"`},
		{"wrong type", `{"status":"success","data":[{"__name__":1}]}`},
		{"error envelope", `{"status":"error","errorType":"timeout","error":"query timed out"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, rec := newTestClient(t, VerbGET, "")
			rec.body = tt.body
			err := c.Series(context.Background(), []string{"a"}, time.Time{}, func(string, []string) error { return nil })
			if err == nil {
				t.Fatal("want error")
			}
		})
	}
	t.Run("callback error stops", func(t *testing.T) {
		c, rec := newTestClient(t, VerbGET, "")
		rec.body = `{"status":"success","data":[{"__name__":"a"},{"__name__":"b"}]}`
		stop := errors.New("stop")
		calls := 0
		err := c.Series(context.Background(), []string{"a"}, time.Time{}, func(string, []string) error { calls++; return stop })
		if !errors.Is(err, stop) || calls != 1 {
			t.Fatalf("err = %v after %d calls", err, calls)
		}
	})
}

func TestLabelValues(t *testing.T) {
	c, rec := newTestClient(t, VerbGET, "")
	v, err := c.LabelValues(context.Background(), "__name__", []string{`{job="x"}`}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(v, ",") != "a_total,b" || rec.form.Get("match[]") != `{job="x"}` {
		t.Errorf("values %v, form %v", v, rec.form)
	}
	if _, err := c.LabelValues(context.Background(), "bad/label", nil, time.Time{}); err == nil {
		t.Error("want error for invalid label name")
	}
}

func TestUnknownVerb(t *testing.T) {
	if _, err := NewHTTPClient("http://127.0.0.1:1", nil, "PUT"); err == nil {
		t.Fatal("want error")
	}
}

// bigServer answers every endpoint with a success envelope whose data holds n
// copies of item (a JSON value), streamed without a Content-Length when chunked.
func bigServer(t *testing.T, item string, n int, chunked bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString(`{"status":"success","data":`)
		if strings.HasSuffix(r.URL.Path, "/query") {
			b.WriteString(`{"resultType":"vector","result":[`)
		} else {
			b.WriteString(`[`)
		}
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(item)
		}
		b.WriteString("]")
		if strings.HasSuffix(r.URL.Path, "/query") {
			b.WriteString("}")
		}
		b.WriteString("}")
		if chunked {
			w.(http.Flusher).Flush() // no Content-Length: the cap must hold while reading
		}
		fmt.Fprint(w, b.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestResponseBytesCap(t *testing.T) {
	sample := `{"metric":{"pod":"p"},"value":[1,"1"]}`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			srv := bigServer(t, sample, 1000, chunked) // about 40 KB
			small, err := NewHTTPClient(srv.URL, srv.Client(), VerbGET, WithMaxResponseBytes(10_000))
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			g, err := NewGuard(small, GuardOptions{MaxConcurrent: 1}, reg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.Query(context.Background(), "up")
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != "response_bytes" || le.Max != 10_000 {
				t.Fatalf("Query over the cap: err = %v, want a response_bytes LimitError", err)
			}
			if _, err := g.LabelValues(context.Background(), "__name__", []string{"{}"}, time.Time{}); !errors.As(err, &le) {
				t.Errorf("LabelValues over the cap: err = %v, want a LimitError", err)
			}
			if got := testutil.ToFloat64(g.metrics.limited.WithLabelValues("response_bytes")); got != 2 {
				t.Errorf("limit_exceeded_total{limit=response_bytes} = %v, want 2", got)
			}
			large, _ := NewHTTPClient(srv.URL, srv.Client(), VerbGET, WithMaxResponseBytes(100_000))
			if v, err := large.Query(context.Background(), "up"); err != nil || len(v) != 1000 {
				t.Errorf("Query under the cap: %d samples, err %v", len(v), err)
			}
		})
	}
}

func TestSeriesBytesCap(t *testing.T) {
	small := `{"__name__":"m","pod":"p"}`
	huge := `{"__name__":"m","pod":"` + strings.Repeat("x", 50_000) + `"}`
	t.Run("many small series pass", func(t *testing.T) {
		srv := bigServer(t, small, 20_000, true) // 500 KB in all, far above the per-series cap
		c, _ := NewHTTPClient(srv.URL, srv.Client(), VerbGET, WithMaxSeriesBytes(4096))
		n := 0
		err := c.Series(context.Background(), []string{"{}"}, time.Time{}, func(string, []string) error { n++; return nil })
		if err != nil || n != 20_000 {
			t.Errorf("Series: %d series, err %v; want 20000, nil", n, err)
		}
	})
	t.Run("one huge series fails", func(t *testing.T) {
		srv := bigServer(t, huge, 1, true)
		c, _ := NewHTTPClient(srv.URL, srv.Client(), VerbGET, WithMaxSeriesBytes(4096))
		err := c.Series(context.Background(), []string{"{}"}, time.Time{}, func(string, []string) error { return nil })
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "series_bytes" {
			t.Errorf("Series with a 50 KB series: err = %v, want a series_bytes LimitError", err)
		}
	})
}
