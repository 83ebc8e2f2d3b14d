package e2e

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestMetricLabelSelectorOperators asks pods/* through kube-apiserver with a metric
// label selector of every operator labels.Parse accepts and a rule can express: each
// is answered with exactly the fixture pods whose series match it, and the selector
// echoed in each value selects the same series. gt/lt, which PromQL matchers cannot
// express, are a 400.
func TestMetricLabelSelectorOperators(t *testing.T) {
	waitDiscovered(t)
	cm, _ := clients(t)
	pods := cm.NamespacedMetrics(fixtureNamespace)
	for _, s := range []string{
		"service=web", "service==web", "service!=web", "service in (web)", "service in (web,worker)",
		"service notin (web)", "service notin (web,worker)", "service", "!service", "service!=nope",
		"service!=web,pod!=worker-0", "pod in (web-0,web-2),service=web",
	} {
		t.Run(s, func(t *testing.T) {
			sel, err := labels.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, p := range fixturePods() {
				if sel.Matches(labels.Set(p.labels())) {
					want = append(want, p.name)
				}
			}
			list, err := pods.GetForObjects(podKind, labels.Everything(), InflightGauge, sel)
			if len(want) == 0 {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("no pod matches: err = %v, want 404", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("GetForObjects: %v", err)
			}
			var got []string
			for _, it := range list.Items {
				got = append(got, it.DescribedObject.Name)
				echoed, err := metav1.LabelSelectorAsSelector(it.Metric.Selector)
				if err != nil {
					t.Fatalf("%s: echoed selector %+v invalid: %v", it.DescribedObject.Name, it.Metric.Selector, err)
				}
				for _, p := range fixturePods() {
					if echoed.Matches(labels.Set(p.labels())) != sel.Matches(labels.Set(p.labels())) {
						t.Errorf("echoed selector %q and requested %q disagree on %s", echoed, sel, p.name)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("pods = %v, want %v", got, want)
			}
		})
	}
	t.Run("gt is a 400", func(t *testing.T) {
		code, body := get(t, env().Client(), "/apis/custom.metrics.k8s.io/v1beta2/namespaces/"+fixtureNamespace+"/pods/*/"+InflightGauge,
			url.Values{"metricLabelSelector": {"service>1"}})
		if code != 400 || !strings.Contains(body, "Status") {
			t.Errorf("gt: %d %.200s, want a 400 Status", code, body)
		}
	})
}

// TestImpossibleNamesThroughAPIServer checks the adapter's answers, through
// kube-apiserver, for names that cannot exist: a metric name over 253 bytes or with
// a byte no rule produces is a 404, a namespace that is not a DNS label or an
// object name over 253 bytes a 400; none echoes the name in full.
func TestImpossibleNamesThroughAPIServer(t *testing.T) {
	waitDiscovered(t)
	long := strings.Repeat("x", 4000)
	base := "/apis/custom.metrics.k8s.io/v1beta2/namespaces/"
	for _, tt := range []struct {
		name, path string
		code       int
	}{
		{"long metric", base + fixtureNamespace + "/pods/*/" + long, 404},
		{"long external metric", "/apis/external.metrics.k8s.io/v1beta1/namespaces/" + fixtureNamespace + "/" + long, 404},
		{"metric with a space", base + fixtureNamespace + "/pods/*/a%20b", 404},
		{"long object name", base + fixtureNamespace + "/pods/" + long + "/" + InflightGauge, 400},
		{"namespace not a label", base + "Not_A_Label/pods/*/" + InflightGauge, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, env().Client(), tt.path, nil)
			if code != tt.code {
				t.Errorf("%d %.300s, want %d", code, body, tt.code)
			}
			if strings.Contains(body, long[:100]) {
				t.Errorf("the answer echoes the name: %.300s", body)
			}
		})
	}
}
