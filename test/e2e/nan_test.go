package e2e

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/ebbflow/ebbflow/test/poll"
)

// TestNaNValuesThroughAPIServer: a 0/0 ratio is NaN in Prometheus. Through
// kube-apiserver, the rule without nanValues serves it as 0
// (prometheus-adapter's behaviour, the default) and the rule with
// nanValues: drop serves no item, so that an autoscaler sees the metric as
// missing rather than low. While the gauge is not 0 both serve 1.
func TestNaNValuesThroughAPIServer(t *testing.T) {
	_, em := clients(t)
	queue := fmt.Sprintf("e2e-nan-%d", time.Now().UnixNano())
	lbl := map[string]string{"queue": queue}
	sel := labels.SelectorFromSet(lbl)
	t.Cleanup(func() {
		exp().Delete(RatioZeroGauge, lbl)
		exp().Delete(RatioDropGauge, lbl)
	})
	// values returns the items' values of metric for the queue.
	values := func(metric string) ([]float64, error) {
		list, err := em.NamespacedMetrics(fixtureNamespace).List(metric, sel)
		if err != nil {
			return nil, err
		}
		var out []float64
		for _, it := range list.Items {
			out = append(out, it.Value.AsApproximateFloat64())
		}
		return out, nil
	}
	expect := func(metric, what string, want []float64) {
		t.Helper()
		poll.Until(t, 90*time.Second, metric+" "+what, func() error {
			got, err := values(metric)
			if err != nil {
				return err
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("items %v, want %v", got, want)
			}
			return nil
		})
		t.Logf("%s %s: %v", metric, what, want)
	}

	exp().SetGauge(RatioZeroGauge, lbl, 4)
	exp().SetGauge(RatioDropGauge, lbl, 4)
	expect(RatioZeroGauge, "4/4", []float64{1})
	expect(RatioDropGauge, "4/4", []float64{1})

	exp().SetGauge(RatioZeroGauge, lbl, 0)
	exp().SetGauge(RatioDropGauge, lbl, 0)
	expect(RatioZeroGauge, "0/0 (NaN served as 0)", []float64{0})
	expect(RatioDropGauge, "0/0 (NaN dropped)", nil)
}
