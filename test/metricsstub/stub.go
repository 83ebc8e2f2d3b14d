// Package metricsstub is an external.metrics.k8s.io server for benchmarks:
// it answers every value question after a fixed delay, from a function of
// the question, and counts the questions. Registered as an APIService (see
// cluster.RegisterExternalMetricsAPI), it gives every controller of a local
// cluster the same metrics API with a controlled latency.
package metricsstub

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	externalv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"

	"github.com/ebbflow/ebbflow/test/certs"
)

// Group and Version served.
const (
	Group   = "external.metrics.k8s.io"
	Version = "v1beta1"
	// DefaultDelay is the latency of an answer unless Options.Delay says
	// otherwise.
	DefaultDelay = 100 * time.Millisecond
)

// Question is one value request.
type Question struct {
	Namespace, Metric string
	Selector          labels.Selector
}

// ValueFunc returns the milli-value of a question at time now; ok false
// answers with an empty list.
type ValueFunc func(q Question, now time.Time) (milli int64, ok bool)

// Options configure a Stub. Value is required.
type Options struct {
	// Delay is waited before every value answer (not discovery); 0 means
	// DefaultDelay, negative none.
	Delay time.Duration
	Value ValueFunc
	// Observe, when set, is called with every question as it arrives.
	Observe func(q Question, at time.Time)
	// DNSNames are the serving certificate's names besides localhost (the
	// aggregator checks <service>.<namespace>.svc).
	DNSNames []string
}

// Stub is a running server. Requests is safe for concurrent use.
type Stub struct {
	opts     Options
	caPEM    []byte
	listener net.Listener
	server   *http.Server
	requests atomic.Int64
}

// Start listens on a loopback port with a fresh self-signed certificate.
func Start(opts Options) (*Stub, error) {
	if opts.Value == nil {
		return nil, errors.New("metricsstub: Options.Value is required")
	}
	if opts.Delay == 0 {
		opts.Delay = DefaultDelay
	}
	cert, caPEM, err := selfSigned(append([]string{"localhost"}, opts.DNSNames...))
	if err != nil {
		return nil, err
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("metricsstub: listen: %w", err)
	}
	s := &Stub{opts: opts, caPEM: caPEM, listener: l}
	s.server = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.server.Serve(l) }()
	return s, nil
}

// Port is the loopback port served.
func (s *Stub) Port() int { return s.listener.Addr().(*net.TCPAddr).Port }

// CABundle is the PEM certificate to trust (the APIService's caBundle).
func (s *Stub) CABundle() []byte { return append([]byte(nil), s.caPEM...) }

// Requests is the number of value questions received so far.
func (s *Stub) Requests() int64 { return s.requests.Load() }

// Close stops serving.
func (s *Stub) Close() error { return s.server.Close() }

// ServeHTTP answers discovery at once and value questions after the delay.
func (s *Stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prefix := "/apis/" + Group + "/" + Version
	switch path := strings.TrimSuffix(r.URL.Path, "/"); {
	case r.Method != http.MethodGet:
		writeStatus(w, http.StatusMethodNotAllowed, "only GET is served")
	case path == "/healthz" || path == "/readyz" || path == "/livez":
		_, _ = w.Write([]byte("ok"))
	case path == "/apis":
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{apiGroup()}})
	case path == "/apis/"+Group:
		writeJSON(w, apiGroup())
	case path == prefix:
		writeJSON(w, metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: Group + "/" + Version,
			APIResources: []metav1.APIResource{{Name: "*", Namespaced: true, Kind: "ExternalMetricValueList", Verbs: []string{"get"}}},
		})
	case strings.HasPrefix(path, prefix+"/namespaces/"):
		s.answer(w, r, strings.Split(strings.TrimPrefix(path, prefix+"/namespaces/"), "/"))
	default:
		writeStatus(w, http.StatusNotFound, "not found")
	}
}

// answer serves namespaces/<ns>/<metric>.
func (s *Stub) answer(w http.ResponseWriter, r *http.Request, parts []string) {
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		writeStatus(w, http.StatusNotFound, "want /namespaces/<namespace>/<metric>")
		return
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "labelSelector: "+err.Error())
		return
	}
	q := Question{Namespace: parts[0], Metric: parts[1], Selector: sel}
	s.requests.Add(1)
	if s.opts.Observe != nil {
		s.opts.Observe(q, time.Now())
	}
	if s.opts.Delay > 0 {
		t := time.NewTimer(s.opts.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	now := time.Now()
	list := externalv1beta1.ExternalMetricValueList{TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: Group + "/" + Version}}
	if v, ok := s.opts.Value(q, now); ok {
		list.Items = []externalv1beta1.ExternalMetricValue{{
			MetricName: q.Metric, MetricLabels: map[string]string{},
			Timestamp: metav1.NewTime(now), Value: *resource.NewMilliQuantity(v, resource.DecimalSI),
		}}
	}
	writeJSON(w, list)
}

func apiGroup() metav1.APIGroup {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + Version, Version: Version}
	return metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Code: int32(code),
	})
}

// selfSigned returns a serving certificate for names and 127.0.0.1, and the
// PEM of the authority that signed it.
func selfSigned(names []string) (tls.Certificate, []byte, error) {
	ca, err := certs.NewAuthority("metricsstub-ca")
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("metricsstub: %w", err)
	}
	pair, err := ca.Issue(certs.Spec{CommonName: "metricsstub", Server: true, DNSNames: names, IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("metricsstub: %w", err)
	}
	cert, err := pair.TLS()
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("metricsstub: %w", err)
	}
	return cert, ca.CertPEM, nil
}
