// Package evaluation is the whole step of one evaluation of an autoscaler:
// an observation in (Input: the spec, the status, the target's scale, its
// pods, every metric's reading, the cluster's size for ClusterProportional
// metrics, the Memory carried from the last evaluation and the clock), a
// result out (Result: every metric's proposal, upstream's decision, the
// extensions' changes, whether the scale was written, the conditions, the
// events, the new status and the decision record). The controller
// (autoscaler/controller) and the replay of history (autoscaler/simulate)
// both call Evaluate; nothing of an evaluation is written twice.
//
// Evaluate runs the stages declared once, in order, in stages.go. Each takes
// the running proposal and returns the next one with the steps it adds to
// the decision record, so the record's steps are in the stages' order:
//
//  1. Bounds (decide.go: Check): a target at zero, above max or below min
//     is decided without metrics; ReadsMetrics tells an observer whether to
//     read them.
//  2. Metrics (decide.go; propose.go: Propose, one function per metric
//     source type, package replicas doing upstream's math; proportional.go:
//     ClusterProportional metrics, package proportional; classify.go: the
//     calculation a spec calls for, upstream's wording of a failure):
//     every metric's proposal and upstream's maximum, with its failure
//     rules.
//  3. Fallback and Activation (fallback_activation.go): a metric failed or
//     stale for fallback.after replaces the proposal by the policy's (it
//     then decides alone); scaling to and from zero by the metrics'
//     activation thresholds.
//  4. Forecast (forecast.go): a metric with a forecast (an Autoscaler's
//     spec.metrics[].forecast) forecasts its value from Reading.Series
//     (package forecast) and raises a proposal the metrics allow to the
//     replicas it asks for — in mode Auto only while the forecast's backtest
//     (forecast.BacktestOf, kept in Memory.Backtests for BacktestRefresh)
//     shows it paid off; condition Forecasting says why not.
//  5. Schedule (schedule.go): the schedules' floor (ActiveFloor, a function
//     of the spec and the clock) raises the proposal, also when the metrics
//     failed. schedule.go also says when the autoscaler is next due
//     (Spec.NextEvaluation: Spec.Period, spec.syncPeriodSeconds, sooner at
//     a floor's change).
//  6. Behavior and ScaleFromZero (decide.go): upstream's stabilization,
//     scaling policies and bounds (package behavior), then the floor to
//     minReplicas when scaling up from zero. The extensions of 3–5 come
//     before it, so what they propose is paced like any proposal: a
//     schedule's rise follows the scale-up behavior, its release the
//     scale-down one.
//  7. Paused and DryRun (holds.go): they act on the decided count and
//     only hold back the write.
//  8. Write (evaluation.go): the decided count written through the
//     WriteScale the caller passes (the controller's /scale write, the
//     replay's simulated workload), then the conditions and event upstream
//     sets after a rescale and the scale event the behavior policies count
//     (input.go: Memory, what an autoscaler carries to its next
//     evaluation).
//
// Upstream's stages always run. An extension's stage runs only when the spec
// sets it (stages.go: wanted; for Schedule, Paused and DryRun also while the
// status still holds its condition, to turn it False), so with none set the
// decision is upstream's and no extension's file is entered. After the
// stages, the status is rebuilt as upstream's setStatus and the record's
// outline made (record.go: the record, its signature — the controller
// stores the record only when its outcome changes — and its JSON). The
// record's time is Input.ReadAt, when the observation completed, so no
// sample it shows is newer than the decision; Input.Now, when the
// evaluation started, seeds the Memory's recommendations as upstream's
// reconcile does.
//
// The spec's view: FromAutoscaler for an Autoscaler, FromHPA for a drop-in
// HorizontalPodAutoscaler and its annotations (input.go), shared by the
// controller and `ebbflow simulate`.
//
// Everything here is pure — values in, values out, time passed in, no I/O:
// the write is the caller's function, called at most once; only
// Input.Memory is updated in place.
package evaluation
