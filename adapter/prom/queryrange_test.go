package prom

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestQueryRange(t *testing.T) {
	var got map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := req.ParseForm(); err != nil {
			t.Error(err)
		}
		got = map[string]string{"path": req.URL.Path}
		for _, k := range []string{"query", "start", "end", "step"} {
			got[k] = req.Form.Get(k)
		}
		switch req.Form.Get("query") {
		case "vector(1)":
			io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		case "bad(":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"status":"error","errorType":"bad_data","error":"parse error"}`)
		default:
			io.WriteString(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"a"},"values":[[1700000000,"1"],[1700000015,"2.5"]]}]}}`)
		}
	}))
	defer srv.Close()
	c, err := NewHTTPClient(srv.URL, srv.Client(), VerbGET)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Unix(1700000000, 0)
	m, err := c.QueryRange(ctx, "up", start, start.Add(15*time.Second), 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || len(m[0].Values) != 2 || m[0].Values[1].Value != 2.5 || m[0].Metric["pod"] != "a" {
		t.Errorf("matrix %v", m)
	}
	want := map[string]string{"path": "/api/v1/query_range", "query": "up", "start": "1700000000.000", "end": "1700000015.000", "step": "15"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, tc := range []struct {
		query      string
		end        time.Time
		step       time.Duration
		wantErrSub string
	}{
		{"vector(1)", start, time.Second, "want a matrix"},
		{"bad(", start, time.Second, "bad_data"},
		{"up", start, 0, "step must be positive"},
		{"up", start.Add(-time.Second), time.Second, "end is before"},
		{"up", start.Add(MaxRangePoints * time.Second), time.Second, "exceeds"},
	} {
		if _, err := c.QueryRange(ctx, tc.query, start, tc.end, tc.step); err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
			t.Errorf("%s: error %v, want %q", tc.query, err, tc.wantErrSub)
		}
	}
}
