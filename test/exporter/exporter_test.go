package exporter

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func scrape(t *testing.T, e *Exporter) string {
	t.Helper()
	resp, err := http.Get(e.URL())
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape status %d: %s", resp.StatusCode, body)
	}
	return string(body)
}

func TestExporterServesSeries(t *testing.T) {
	e := New()
	e.Start(t)
	if !strings.HasPrefix(e.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr() = %q, want a 127.0.0.1 address", e.Addr())
	}

	web0 := map[string]string{"namespace": "ns1", "pod": "web-0", "service": "web"}
	e.AddCounter("http_requests_total", web0, 3)
	e.AddCounter("http_requests_total", web0, 2)
	e.SetGauge("queue_messages_ready", map[string]string{"queue": "orders"}, 42)

	body := scrape(t, e)
	for _, want := range []string{
		`# TYPE http_requests_total counter`,
		`http_requests_total{namespace="ns1",pod="web-0",service="web"} 5`,
		`# TYPE queue_messages_ready gauge`,
		`queue_messages_ready{queue="orders"} 42`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("exposition lacks %q:\n%s", want, body)
		}
	}

	// A metric name that first appears while serving.
	e.SetGauge("late_metric", nil, 1.5)
	if body := scrape(t, e); !strings.Contains(body, "late_metric 1.5") {
		t.Errorf("late metric missing:\n%s", body)
	}

	if !e.Delete("queue_messages_ready", map[string]string{"queue": "orders"}) {
		t.Error("Delete of an existing series returned false")
	}
	if e.Delete("queue_messages_ready", map[string]string{"queue": "orders"}) {
		t.Error("second Delete returned true")
	}
	if e.Delete("no_such_metric", nil) {
		t.Error("Delete of an unknown metric returned true")
	}
	if body := scrape(t, e); strings.Contains(body, `queue="orders"`) {
		t.Errorf("deleted series still exposed:\n%s", body)
	}

	if !e.Unregister("late_metric") {
		t.Error("Unregister of an existing metric returned false")
	}
	e.AddCounter("late_metric", nil, 1) // name reusable as another kind
	if body := scrape(t, e); !strings.Contains(body, "# TYPE late_metric counter\nlate_metric 1") {
		t.Errorf("re-registered metric missing:\n%s", body)
	}
}

func TestExporterMisusePanics(t *testing.T) {
	tests := []struct {
		name string
		do   func(e *Exporter)
	}{
		{"different label names", func(e *Exporter) {
			e.SetGauge("g", map[string]string{"queue": "a"}, 1)
			e.SetGauge("g", map[string]string{"pod": "a"}, 1)
		}},
		{"kind change", func(e *Exporter) {
			e.SetGauge("m", nil, 1)
			e.AddCounter("m", nil, 1)
		}},
		{"negative counter delta", func(e *Exporter) {
			e.AddCounter("c_total", nil, -1)
		}},
		{"invalid metric name", func(e *Exporter) {
			e.SetGauge("not a name", nil, 1)
		}},
		{"invalid label name", func(e *Exporter) {
			e.SetGauge("g", map[string]string{"a-b": "x"}, 1)
		}},
		{"reserved label name", func(e *Exporter) {
			e.SetGauge("g", map[string]string{"__name__": "x"}, 1)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tt.do(New())
		})
	}
}

func TestListenRejectsNonLoopback(t *testing.T) {
	e := New()
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:9100"} {
		if err := e.Listen(addr); err == nil {
			_ = e.Close()
			t.Errorf("Listen(%q) succeeded, want an error", addr)
		}
	}
}

func TestCloseAndRelisten(t *testing.T) {
	e := New()
	e.SetGauge("kept", nil, 7)
	if err := e.Listen(""); err != nil {
		t.Fatal(err)
	}
	if err := e.Listen(""); err == nil {
		t.Error("second Listen succeeded, want an error")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if e.Addr() != "" {
		t.Errorf("Addr() after Close = %q, want empty", e.Addr())
	}
	e.Start(t)
	if body := scrape(t, e); !strings.Contains(body, "kept 7") {
		t.Errorf("series lost across Close/Listen:\n%s", body)
	}
}
