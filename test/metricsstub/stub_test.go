package metricsstub

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externalv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
)

func TestStub(t *testing.T) {
	var seen []Question
	s, err := Start(Options{
		Delay: -1,
		Value: func(q Question, _ time.Time) (int64, bool) {
			if q.Metric == "absent" {
				return 0, false
			}
			v, _ := q.Selector.RequiresExactMatch("hpa")
			return int64(len(v)) * 1500, true
		},
		Observe:  func(q Question, _ time.Time) { seen = append(seen, q) },
		DNSNames: []string{"stub.ns.svc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CABundle()) {
		t.Fatal("CABundle is not PEM")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "stub.ns.svc"}}}
	get := func(path string, into any) int {
		t.Helper()
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d%s", s.Port(), path))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if into != nil {
			if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		return resp.StatusCode
	}
	var rl metav1.APIResourceList
	if code := get("/apis/external.metrics.k8s.io/v1beta1", &rl); code != 200 || rl.GroupVersion != "external.metrics.k8s.io/v1beta1" {
		t.Errorf("discovery: %d %+v", code, rl)
	}
	var list externalv1beta1.ExternalMetricValueList
	if code := get("/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/q0?labelSelector=hpa%3Dabcd", &list); code != 200 || len(list.Items) != 1 || list.Items[0].Value.MilliValue() != 6000 {
		t.Errorf("value: %d %+v", code, list)
	}
	list = externalv1beta1.ExternalMetricValueList{}
	if code := get("/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/absent", &list); code != 200 || len(list.Items) != 0 {
		t.Errorf("absent: %d %+v", code, list)
	}
	var st metav1.Status
	if code := get("/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/q0?labelSelector=a%20in", &st); code != http.StatusBadRequest {
		t.Errorf("bad selector: %d %+v", code, st)
	}
	if code := get("/apis/external.metrics.k8s.io/v1beta1/namespaces/ns", nil); code != http.StatusNotFound {
		t.Errorf("no metric: %d", code)
	}
	if got := s.Requests(); got != 2 || len(seen) != 2 || seen[0].Namespace != "ns" || seen[0].Metric != "q0" {
		t.Errorf("requests = %d, seen %+v; want the two value questions counted", got, seen)
	}
}

func TestStartNeedsValue(t *testing.T) {
	if _, err := Start(Options{}); err == nil {
		t.Error("Start without Value: no error")
	}
}
