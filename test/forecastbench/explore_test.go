//go:build forecastbench

package forecastbench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// TEMPORARY exploration.
func TestForecastExplore(t *testing.T) {
	const peakPods, capacity = 40, 100.0
	startups := studyStartups(t, []int{60})
	want := os.Getenv("EBBFLOW_STUDY_TRACES")
	var methods []forecast.Method
	for _, m := range strings.Split(os.Getenv("EBBFLOW_STUDY_METHODS"), ";") {
		methods = append(methods, forecast.Method(m))
		forecast.Methods = append(forecast.Methods, forecast.Method(m))
	}
	season := v1alpha1.ForecastSeason(os.Getenv("EBBFLOW_STUDY_SEASON"))
	zero := resource.MustParse("0")
	tol0 := os.Getenv("EBBFLOW_STUDY_TOL") == "0"
	var out strings.Builder
	for _, tr := range Traces(tracesDir()) {
		if want != "" && !strings.Contains(","+want+",", ","+tr.Name+",") {
			continue
		}
		span := 84 * forecast.Daily
		if tr.Name == "nasa" {
			span = 62 * forecast.Daily
		}
		g, err := Resample(tr, time.Minute, span)
		if err != nil {
			t.Fatal(err)
		}
		series := milli(g.Scaled(peakPods * capacity))
		for _, su := range startups {
			startup := time.Duration(su) * time.Second
			s := Setup{Capacity: capacity, Targets: []float64{1, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6}, ForecastTargets: []float64{1, 0.9, 0.8},
				Season: season, Step: time.Minute, Startup: startup, Warmup: 4 * forecast.Weekly, MaxReplicas: 100, Methods: methods}
			if tol0 {
				s.Targets, s.ForecastTargets = s.Targets[:5], []float64{1, 0.95}
				s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: &zero}}
			}
			began := time.Now()
			rows, err := Replay(tr.Name, series, g.Start, s)
			if err != nil {
				t.Fatal(err)
			}
			WriteTable(&out, fmt.Sprintf("**%s**, start-up %v, season %s, tol0 %v (%v)", tr.Name, startup, season, tol0, time.Since(began).Round(time.Second)), rows)
		}
	}
	t.Log(out.String())
}
