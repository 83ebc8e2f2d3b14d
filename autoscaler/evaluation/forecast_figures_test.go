package evaluation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// Forecasts gives the usable forecasts only, with what they ask for.
func TestResultForecasts(t *testing.T) {
	f := &v1alpha1.MetricForecast{Lead: &metav1.Duration{Duration: 5 * time.Minute}, Method: "SeasonalMax"}
	for _, c := range []struct {
		name string
		hist *forecast.Series
		want []ForecastFigure
	}{
		// The backtest of the 2 days after the first: the floor removes
		// the whole shortfall of each day's peak.
		{"usable", dailyPeak(3, 20, 50), []ForecastFigure{{Index: 0, Metric: "queue", Value: 50, Replicas: 5, Applied: true, ShortRatio: 0}}},
		{"no history", nil, nil},
		{"less than a season", dailyPeak(0, 20, 50), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h Memory
			res := Evaluate(forecastInput(&h, 2, 20_000, f, c.hist), nil)
			got := res.Forecasts()
			if len(got) != len(c.want) {
				t.Fatalf("forecasts %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("forecast %+v, want %+v", got[i], c.want[i])
				}
			}
		})
	}
	var h Memory
	res := Evaluate(input(&h, 2, external(20_000)), nil)
	if got := res.Forecasts(); got != nil {
		t.Errorf("forecasts %+v without a forecast in the spec", got)
	}
}
