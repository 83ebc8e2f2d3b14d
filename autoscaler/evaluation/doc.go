// Package evaluation is the whole pure step of one evaluation of an
// autoscaler: an observation in (Input: the spec, the status, the target's
// scale, its pods, every metric's reading, the cluster's size for
// ClusterProportional metrics, the history carried from the last evaluation
// and the clock), a result out (Result: every metric's proposal, upstream's
// decision, the extensions' steps, whether and what to write to /scale, the
// conditions, the events, the new status and the decision record). The
// controller (autoscaler/controller) and the replay of history
// (autoscaler/simulate) both call Evaluate; nothing of an evaluation is
// written twice.
//
// One evaluation, in order (Evaluate, then Written after a scale write):
//
//  1. Bounds (decide.go: Check): a target at zero, above max or below min
//     decides without metrics; ReadsMetrics tells an observer whether to
//     read them.
//  2. Proposals (propose.go: Propose, one function per metric source type;
//     proportional.go): one per metric, as upstream's replica calculator
//     (package replicas does the math), then one per ClusterProportional
//     metric (package proportional). classify.go: the calculation a spec
//     calls for, and upstream's wording of a failed metric.
//     Forecasts (forecast.go): a metric with a forecast (an Autoscaler's
//     spec.metrics[].forecast) forecasts its value from Reading.History
//     (package forecast) and the replicas it asks for, as the metric's
//     target would, floor the combined proposal (max of the two) before
//     normalization — in mode Auto only while the forecast's backtest
//     (forecast.BacktestOf, kept in History.Backtests for BacktestRefresh)
//     shows it paid off; without a history or a forecast, or with a
//     backtest that did not pay off, the metric decides alone, and
//     condition Forecasting says why.
//  3. Upstream's decision (decide.go: decide): the maximum with upstream's
//     failure rules, then stabilization and the scaling policies (package
//     behavior), the floor when scaling from zero.
//  4. Extensions (extensions.go: their spec, and pause and dry-run, which act
//     on the final count and only hold back the write): fallback and
//     activation (fallback_activation.go) act on the combined proposal
//     before normalization, so they are paced like any proposal; then the
//     schedules' floor (schedule.go: ActiveFloor, a function of the spec and
//     the clock; withFloor) raises that proposal, so a rise follows the
//     scale-up behavior and the release at a schedule's end the scale-down
//     one. schedule.go also says when the autoscaler is next due
//     (Spec.NextEvaluation: Spec.Period, spec.syncPeriodSeconds, sooner at
//     a floor's change). With none set the decision is upstream's, and no
//     extension's file is entered: compute calls each behind what the spec
//     sets (input.go: Spec.HasForecast, hasProposalExtension; schedules;
//     paused and dry-run, or their condition still in the status).
//  5. Write and after (evaluation.go: Result.Write, Written): the
//     conditions and event upstream sets after a rescale, the scale event
//     the behavior policies count (input.go: History, what an autoscaler
//     carries to its next evaluation).
//  6. Status and record (evaluation.go, record.go): the status rebuilt as
//     upstream's setStatus; the decision record (record.go: building it, its
//     signature — the controller stores the record only when its outcome
//     changes — and its JSON; record_steps.go: its metrics and steps). The
//     record's time is Input.ReadAt, when the observation completed, so no
//     sample it shows is newer than the decision; Input.Now, when the
//     evaluation started, seeds the history as upstream's reconcile does.
//
// Everything here is pure: values in, values out, time passed in; only
// Input.History is updated in place.
package evaluation
