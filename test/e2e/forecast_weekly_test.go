package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
)

// The weekly forecast e2e's settings; load, target and bounds are the daily
// e2e's (forecastLow, forecastHigh, forecastTarget, forecastMin).
const (
	// weeklyStep is the step of a Weekly season's history
	// (evaluation.ForecastOptions.HistoryStep, the step the controller
	// reads). Prometheus aligns a subquery's points
	// to multiples of it, so the ramp sits on one: the window of ±5 minutes
	// around the target time then holds the ramp's first point exactly when
	// now+lead reaches the ramp.
	weeklyStep = 5 * time.Minute
	// weeklyMinLead is the shortest lead the test gives the forecast; the
	// lead is longer when the cluster starts faster than its budget.
	weeklyMinLead = 60 * time.Second
	// weeklyStartBudget is the time the cluster (with four weeks of
	// history) and ebbflow-autoscaler get to start. The test does not wait
	// for the ramp: a start faster than the budget lengthens the lead, not
	// the test.
	weeklyStartBudget = 150 * time.Second
	// weeklyEvaluations is how many evaluations come before the one just
	// past the forecast's horizon; none of them may scale.
	weeklyEvaluations = 2
)

// weeklyLoad is the queue depth at t when the load ramps to forecastHigh
// for two hours at ramp's time of day on ramp's weekday only, every week.
func weeklyLoad(t, ramp time.Time) float64 {
	const week = 7 * 24 * time.Hour
	d := t.Sub(ramp) % week
	if d < 0 {
		d += week
	}
	if d < 2*time.Hour {
		return forecastHigh
	}
	return forecastLow
}

// TestForecastWeeklySeason is the weekly season end to end, on a cluster of
// its own whose Prometheus holds four weeks and two hours of the queue, one
// sample a minute: it ramped at the same time on the same weekday each week
// and never on the other days. The next ramp comes a few minutes after the
// test starts. ebbflow-autoscaler reads the history at the Weekly step (four
// weeks and an hour every 5 minutes, through kube-apiserver's aggregation and
// ebbflow-adapter's history contract). Two Autoscalers on the same metric and
// target: `season: Weekly` scales up at least lead − one sync period before
// the ramp — and not before now+lead reaches it — with a decision record
// whose Forecast step names the Weekly season and four past seasons; `season:
// Daily` (the past four days had no ramp at that time) does not scale.
//
// The test ends at the Weekly Autoscaler's write, before the ramp: the
// lead is what is left to the ramp (a multiple of 5 minutes away) once the
// cluster is up, at least weeklyMinLead.
func TestForecastWeeklySeason(t *testing.T) {
	// Its own cluster: runs beside the other parallel tests.
	t.Parallel()
	t0 := time.Now()
	ramp := t0.Add(weeklyStartBudget + weeklyMinLead + (weeklyEvaluations+1)*forecastPeriod).Truncate(weeklyStep).Add(weeklyStep)
	t.Logf("the ramp arrives at %s, a %s", ramp.Format(time.TimeOnly), ramp.Weekday())

	e := exporter.New()
	e.Start(t)
	e.SetGauge(QueueGauge, forecastLabels(), forecastLow)
	until := t0.Truncate(time.Minute)
	history := queueHistory(until.Add(-(forecast.DefaultSeasons*forecast.Weekly + 2*time.Hour)), until, time.Minute,
		func(ts time.Time) float64 { return weeklyLoad(ts, ramp) })
	c, ebb := startForecastCluster(t, e.Addr(), "forecast", cluster.Options{
		RulesYAML:           []byte(forecastRules),
		PrometheusRetention: 35 * 24 * time.Hour,
		PrometheusBackfill:  history,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "default"
	seasons := map[string]v1alpha1.ForecastSeason{"weekly": v1alpha1.SeasonWeekly, "daily": v1alpha1.SeasonDaily}
	for name := range seasons {
		createForecastDeployment(ctx, t, c.Client(), ns, name)
	}
	// The controller reads a history again only every 5 minutes: the
	// Autoscalers are created once Prometheus answers the four weeks.
	if _, err := pollUntil(30*time.Second, func(ctx context.Context) bool {
		return promCount(ctx, c.Prometheus().URL(), `count_over_time(`+QueueGauge+`[4w])`) > 4*7*24*60-60
	}); err != nil {
		t.Fatalf("Prometheus does not answer the backfilled weeks: %v", err)
	}

	// Evaluations come every sync period from an Autoscaler's creation. The
	// lead puts the forecast's horizon (ramp − lead) just before the
	// (weeklyEvaluations+1)th evaluation, so that write measures the
	// forecast rather than the evaluations' phase.
	created := time.Now()
	horizon := created.Add((weeklyEvaluations+1)*forecastPeriod - forecastPeriod/10)
	lead := ramp.Sub(horizon).Truncate(time.Second)
	horizon = ramp.Add(-lead)
	if lead < weeklyMinLead {
		t.Fatalf("the cluster and ebbflow-autoscaler took %v to start, more than the budget of %v: %v left for the lead before the ramp at %s",
			time.Since(t0).Round(time.Second), weeklyStartBudget, lead, ramp.Format(time.TimeOnly))
	}
	t.Logf("ready after %v; lead %v (horizon %s)", time.Since(t0).Round(time.Second), lead, horizon.Format("15:04:05.000"))
	if step := (evaluation.ForecastOptions{Season: forecast.Weekly}).HistoryStep(); step != weeklyStep {
		t.Fatalf("the controller reads a Weekly history every %v, the test assumes %v", step, weeklyStep)
	}

	writes := map[string]chan time.Time{}
	for name, season := range seasons {
		spec := hpaSpec(forecastMin, forecastMax, nil, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ExternalMetricSourceType,
			External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: QueueGauge,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": forecastQueue}}},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse(forecastTarget))},
			},
		})
		spec.ScaleTargetRef.Name = name
		a := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1test.FromHPASpec(&spec)}
		a.Spec.SyncPeriodSeconds = ptr.To(int32(forecastPeriod / time.Second))
		a.Spec.Metrics[0].Forecast = &v1alpha1.MetricForecast{Season: season, Method: v1alpha1.ForecastMethod("LevelCorrected"),
			Lead: &metav1.Duration{Duration: lead}}
		writes[name] = make(chan time.Time, 1)
		go firstScaleAbove(ctx, c.Client(), ns, name, forecastMin, writes[name])
		if _, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Create(ctx, a, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create autoscaler %s: %v", name, err)
		}
	}

	w := waitWrite(t, writes["weekly"], ramp, "the Weekly Autoscaler")
	checkForecastWrite(t, "the Weekly Autoscaler", w, ramp, horizon, lead)
	// The status (record and condition) is written after the scale.
	var got *v1alpha1.Autoscaler
	var step string
	if _, err := pollUntil(10*time.Second, func(ctx context.Context) bool {
		a, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, "weekly", metav1.GetOptions{})
		got = a
		if err != nil || got.Status.LastDecision == nil {
			return false
		}
		step = forecastStep(got.Status.LastDecision)
		return hasForecastStep(got.Status.LastDecision) &&
			strings.Contains(step, fmt.Sprintf("(%s season, LevelCorrected, %d past seasons)", v1alpha1.SeasonWeekly, forecast.DefaultSeasons))
	}); err != nil {
		t.Errorf("no decision record whose Forecast step raises the proposal above %d from %d past Weekly seasons: %v; last step: %q",
			forecastMin, forecast.DefaultSeasons, err, step)
	} else {
		t.Logf("Weekly Forecast step: %s", step)
	}
	if got == nil || !hasConditionReason(got, "Forecasting", corev1.ConditionTrue, "ForecastAvailable") {
		t.Errorf("Weekly: Forecasting condition not True/ForecastAvailable: %+v", got)
	}

	// The Daily Autoscaler, created with the same lead and period, has
	// evaluated past the horizon too (its record is rewritten only when its
	// outcome changes): its past days had no ramp at that time, so it
	// forecasts the low load and keeps forecastMin.
	var daily *v1alpha1.Autoscaler
	if _, err := pollUntil(10*time.Second, func(ctx context.Context) bool {
		a, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, "daily", metav1.GetOptions{})
		daily = a
		return err == nil && daily.Status.LastDecision != nil &&
			strings.Contains(forecastStep(daily.Status.LastDecision), fmt.Sprintf("(%s season,", v1alpha1.SeasonDaily))
	}); err != nil {
		t.Errorf("no decision record of the Daily Autoscaler with a Daily Forecast step: %v; last: %+v", err, daily)
	} else {
		t.Logf("Daily Forecast step: %s", forecastStep(daily.Status.LastDecision))
		if hasForecastStep(daily.Status.LastDecision) {
			t.Errorf("the Daily Autoscaler's forecast raised its proposal before the ramp: %+v", daily.Status.LastDecision.Steps)
		}
	}
	time.Sleep(time.Until(w.Add(forecastPeriod)))
	select {
	case dw := <-writes["daily"]:
		t.Errorf("the Daily Autoscaler scaled above %d at %s, before the ramp at %s", forecastMin, dw.Format("15:04:05.000"), ramp.Format(time.TimeOnly))
	default:
	}
	t.Logf("wall time %v", time.Since(t0).Round(time.Second))
}

// forecastStep is the Forecast step of rec, "" when it has none.
func forecastStep(rec *v1alpha1.DecisionRecord) string {
	for _, s := range rec.Steps {
		if s.Stage == evaluation.StageForecast {
			return fmt.Sprintf("%d → %d: %s", s.From, s.To, s.Message)
		}
	}
	return ""
}
