// Package simulate replays recorded metric history through the autoscaler's
// evaluation (evaluation.Evaluate, the entry point the controller calls: the
// same bounds, proposals, decision, behaviors, extensions, tolerances and
// status carried from step to step, its write scaling the simulated
// workload) on a simulated clock, feeding the simulated replica count back
// into the metrics.
//
// The load model:
//
//   - Object and External metrics are replayed as recorded: they do not
//     depend on the replica count.
//   - Pods metrics conserve the load: the recorded per-pod values summed over
//     the pods that existed is the load, and each ready simulated pod reports
//     that load divided by the number of ready simulated pods. A new pod
//     becomes ready PodStartup after it was created; until then it has no
//     sample (a missing pod, counted as upstream counts missing pods).
//   - Resource and ContainerResource metrics conserve the load the same way;
//     their samples carry Config.ResourceWindow (the cpu readiness rules see
//     it), and every pod requests what Config.Template says (the denominator
//     of a Utilization target, which cannot be replayed without it).
//   - A step with no recorded value is a metric the metrics API could not
//     serve: the metric fails, as in the controller (an Object or External
//     metric with treatMissingAs Zero reads 0).
//   - ClusterProportional metrics are replayed from the cluster's recorded
//     size at each step (Series.Sizes; `ebbflow simulate` reads it from
//     kube-state-metrics' node series). A metric whose parameters come from
//     a ConfigMap, or that counts the nodes of a selector, cannot be
//     replayed: ValidateMetrics refuses it, naming the metric.
//
// The spec's schedules and syncPeriodSeconds replay as the controller runs
// them: the floor is computed by the evaluation from the simulated clock, and
// a step evaluates only when the spec is due (evaluation.Spec.NextEvaluation:
// every step, or every syncPeriodSeconds when longer, sooner at a schedule's
// start); the steps between observe the load and the pods.
//
// Everything here is pure: Run reads values and returns values.
package simulate
