package prom

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

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
