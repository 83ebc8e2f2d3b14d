package discovery_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// The synthetic series BenchmarkDiscovery lists: the rule file, the series
// and the fake Prometheus that streams them.

// benchRules is prometheus-adapter's Helm chart default rule set (cAdvisor and
// namespaced application metrics) plus one external rule: the rule file most
// installations start from. Its three distinct series queries are answered by
// benchSelectors.
const benchRules = `
rules:
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^container_(.*)_seconds_total$", as: ""}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[5m])) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters: [{isNot: "^container_.*_seconds_total$"}]
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^container_(.*)_total$", as: ""}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[5m])) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  seriesFilters: [{isNot: "^container_.*_total$"}]
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^container_(.*)$", as: ""}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>,container!="POD"}) by (<<.GroupBy>>)'
- seriesQuery: '{namespace!="",__name__!~"^container_.*"}'
  seriesFilters: [{isNot: ".*_total$"}]
  resources: {template: "<<.Resource>>"}
  name: {matches: "", as: ""}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: '{namespace!="",__name__!~"^container_.*"}'
  seriesFilters: [{isNot: ".*_seconds_total"}]
  resources: {template: "<<.Resource>>"}
  name: {matches: "^(.*)_total$", as: ""}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)'
- seriesQuery: '{namespace!="",__name__!~"^container_.*"}'
  resources: {template: "<<.Resource>>"}
  name: {matches: "^(.*)_seconds_total$", as: ""}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: '{__name__="kafka_consumergroup_lag",namespace!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (consumergroup)'
`

// benchSelectors answers each series query of benchRules: the metric names it selects.
// Every generated series has non-empty namespace, pod and container labels, so only
// the name part of each selector decides.
var benchSelectors = map[string]func(name string) bool{
	`{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}`: func(n string) bool { return strings.HasPrefix(n, "container_") },
	`{namespace!="",__name__!~"^container_.*"}`:                          func(n string) bool { return !strings.HasPrefix(n, "container_") },
	`{__name__="kafka_consumergroup_lag",namespace!=""}`:                 func(n string) bool { return n == "kafka_consumergroup_lag" },
}

// benchNames are the 100 metric names of the synthetic Prometheus: 40 cAdvisor, 15
// kube-state-metrics and 45 application metrics.
var benchNames = strings.Fields(`
container_cpu_usage_seconds_total container_cpu_system_seconds_total container_cpu_user_seconds_total
container_cpu_cfs_periods_total container_cpu_cfs_throttled_periods_total container_cpu_cfs_throttled_seconds_total
container_memory_working_set_bytes container_memory_rss container_memory_cache container_memory_usage_bytes
container_memory_swap container_memory_mapped_file container_memory_failcnt container_memory_max_usage_bytes
container_network_receive_bytes_total container_network_transmit_bytes_total container_network_receive_packets_total
container_network_transmit_packets_total container_network_receive_errors_total container_network_transmit_errors_total
container_network_receive_packets_dropped_total container_network_transmit_packets_dropped_total
container_fs_reads_bytes_total container_fs_writes_bytes_total container_fs_reads_total container_fs_writes_total
container_fs_usage_bytes container_fs_limit_bytes container_fs_inodes_free container_fs_inodes_total
container_spec_cpu_period container_spec_cpu_quota container_spec_cpu_shares container_spec_memory_limit_bytes
container_spec_memory_reservation_limit_bytes container_last_seen container_start_time_seconds
container_processes container_threads container_oom_events_total
kube_pod_info kube_pod_status_phase kube_pod_status_ready kube_pod_container_status_restarts_total
kube_pod_container_status_running kube_pod_container_status_waiting kube_pod_container_status_terminated
kube_pod_container_resource_requests kube_pod_container_resource_limits kube_pod_owner kube_pod_labels
kube_pod_created kube_pod_start_time kube_pod_status_scheduled kube_pod_container_info
http_requests_total http_request_duration_seconds_bucket http_request_duration_seconds_sum
http_request_duration_seconds_count http_request_size_bytes_sum http_response_size_bytes_sum http_requests_in_flight
grpc_server_handled_total grpc_server_started_total grpc_server_msg_received_total grpc_server_msg_sent_total
grpc_server_handling_seconds_sum grpc_server_handling_seconds_count process_cpu_seconds_total
process_resident_memory_bytes process_virtual_memory_bytes process_open_fds process_max_fds
process_start_time_seconds go_goroutines go_threads go_gc_duration_seconds_sum go_gc_duration_seconds_count
go_memstats_alloc_bytes go_memstats_heap_inuse_bytes go_memstats_heap_objects go_memstats_alloc_bytes_total
go_info kafka_consumergroup_lag kafka_consumer_records_consumed_total queue_messages_ready
queue_messages_unacked jobs_processed_total jobs_failed_total jobs_duration_seconds_sum cache_hits_total
cache_misses_total db_client_connections_open db_client_queries_total db_client_query_duration_seconds_sum
app_build_info app_errors_total app_active_sessions app_tasks_pending app_requests_rejected_total
`)

// appendSeries appends series i of the synthetic Prometheus as a JSON object, labels
// sorted as Prometheus sends them. Series i has metric benchNames[i%100] and belongs
// to pod i/100, so every pod has one series of each name and the pod label values are
// unique per pod (10,000 pods at 1M series); cAdvisor id/name are unique per series.
// No value needs JSON escaping. It does not allocate once buf has grown.
func appendSeries(buf []byte, i int) []byte {
	name := benchNames[i%len(benchNames)]
	w := seriesWriter{buf: buf, p: uint64(i / len(benchNames)), h: uint64(i+1) * 0x9E3779B97F4A7C15}
	w.buf = append(append(append(w.buf, `{"__name__":"`...), name...), '"')
	switch {
	case strings.HasPrefix(name, "container_"):
		w.cadvisor()
	case strings.HasPrefix(name, "kube_"):
		w.kubeStateMetrics()
	default:
		w.application(name)
	}
	return append(w.buf, '}')
}

// seriesWriter appends the labels of one series of pod p; h is a per-series hash.
type seriesWriter struct {
	buf  []byte
	p, h uint64
}

// label appends `,"k":"` + prefix + n (when n >= 0) + `"`.
func (w *seriesWriter) label(k, prefix string, n int64) {
	w.buf = append(append(append(w.buf, ',', '"'), k...), '"', ':', '"')
	w.buf = append(w.buf, prefix...)
	if n >= 0 {
		w.buf = strconv.AppendInt(w.buf, n, 10)
	}
	w.buf = append(w.buf, '"')
}

// raw appends already-encoded labels, e.g. `,"job":"kubelet"`.
func (w *seriesWriter) raw(s string) { w.buf = append(w.buf, s...) }

func (w *seriesWriter) namespace() { w.label("namespace", "team-", int64(w.p%50)) }

func (w *seriesWriter) pod() {
	w.raw(`,"pod":"`)
	w.buf = appendPod(w.buf, w.p)
	w.raw(`"`)
}

// cadvisor writes the labels the kubelet ServiceMonitor gives cAdvisor series.
func (w *seriesWriter) cadvisor() {
	w.label("container", "app-", int64(w.p%3))
	w.raw(`,"endpoint":"https-metrics","id":"/kubepods/burstable/pod`)
	w.buf = appendBase(w.buf, w.h>>8, 16, 16)
	w.buf = appendBase(append(w.buf, '/'), w.h, 16, 12)
	w.raw(`"`)
	w.label("image", "registry.example.com/team-", int64(w.p%50))
	w.buf = append(w.buf[:len(w.buf)-1], `/app:1.2.3"`...)
	w.label("instance", "192.168.0.", int64(w.p%200))
	w.buf = append(w.buf[:len(w.buf)-1], `:10250"`...)
	w.raw(`,"job":"kubelet","metrics_path":"/metrics/cadvisor","name":"`)
	w.buf = appendBase(w.buf, w.h, 16, 16)
	w.raw(`"`)
	w.namespace()
	w.label("node", "node-", int64(w.p%200))
	w.pod()
	w.raw(`,"service":"kubelet"`)
}

// kubeStateMetrics writes the labels of a kube-state-metrics pod series.
func (w *seriesWriter) kubeStateMetrics() {
	w.label("container", "app-", int64(w.p%3))
	w.raw(`,"endpoint":"http","instance":"10.0.0.5:8080","job":"kube-state-metrics"`)
	w.namespace()
	w.pod()
	w.raw(`,"service":"kube-state-metrics","uid":"`)
	w.buf = appendBase(w.buf, w.h>>4, 16, 16)
	w.raw(`"`)
}

// application writes the labels of an application series scraped from its pod; HTTP
// series have method and code, and handler on every other pod (two label-name sets).
func (w *seriesWriter) application(name string) {
	http := strings.HasPrefix(name, "http_")
	if http {
		w.raw(`,"code":"200"`)
	}
	if strings.HasPrefix(name, "kafka_") {
		w.label("consumergroup", "group-", int64(w.p%10))
	}
	w.raw(`,"container":"app","endpoint":"http"`)
	if http && w.p%2 == 1 {
		w.raw(`,"handler":"/api/v1/items"`)
	}
	w.label("instance", "10.", int64(1+w.p>>16&0xff))
	w.buf = strconv.AppendUint(append(w.buf[:len(w.buf)-1], '.'), w.p>>8&0xff, 10)
	w.buf = strconv.AppendUint(append(w.buf, '.'), w.p&0xff, 10)
	w.raw(`:8080"`)
	w.label("job", "svc-", int64(w.p%7))
	if http {
		w.raw(`,"method":"GET"`)
	}
	w.namespace()
	w.pod()
	w.label("service", "svc-", int64(w.p%7))
}

// appendPod appends a Deployment-style pod name, unique per p.
func appendPod(buf []byte, p uint64) []byte {
	buf = append(buf, "web-"...)
	buf = appendBase(buf, (p/8)*0x2545F4914F6CDD1D, 16, 10)
	return appendBase(append(buf, '-'), p*0x9E3779B97F4A7C15+p, 36, 5)
}

// appendBase appends the low digits of v in base (16 or 36), zero-padded to width.
func appendBase(buf []byte, v uint64, base uint64, width int) []byte {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	for range width {
		buf = append(buf, digits[v%base])
		v /= base
	}
	return buf
}

// seriesServer is a fake Prometheus /api/v1/series endpoint holding n series. It writes
// each answer as a stream, one series at a time, so its memory does not grow with n.
func seriesServer(tb testing.TB, n int) *httptest.Server {
	tb.Helper()
	selected := make(map[string][]bool, len(benchSelectors)) // selector -> by name index
	for sel, match := range benchSelectors {
		by := make([]bool, len(benchNames))
		for j, name := range benchNames {
			by[j] = match(name)
		}
		selected[sel] = by
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/series", func(w http.ResponseWriter, r *http.Request) {
		by, ok := selected[r.FormValue("match[]")]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"unknown selector"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 64<<10)
		buf := make([]byte, 0, 1024)
		_, _ = bw.WriteString(`{"status":"success","data":[`)
		first := true
		for i := range n {
			if !by[i%len(benchNames)] {
				continue
			}
			buf = buf[:0]
			if !first {
				buf = append(buf, ',')
			}
			first = false
			if _, err := bw.Write(appendSeries(buf, i)); err != nil {
				return // client went away
			}
		}
		_, _ = bw.WriteString(`]}`)
		_ = bw.Flush()
	})
	srv := httptest.NewUnstartedServer(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	tb.Cleanup(srv.Close)
	return srv
}

// benchRuleSet compiles benchRules and checks that the fake answers its queries.
func benchRuleSet(tb testing.TB) []*rules.Rule {
	tb.Helper()
	set, err := rules.Parse([]byte(benchRules), rulefile.DefaultRESTMapper())
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range set.Rules {
		if _, ok := benchSelectors[r.SeriesQuery()]; !ok {
			tb.Fatalf("fake Prometheus does not answer series query %q", r.SeriesQuery())
		}
	}
	return set.Rules
}
