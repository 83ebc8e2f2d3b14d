// Package forecastbench measures forecasts on real traffic (issue 22 §4):
// it backfills public request-rate traces (/work/shared/traces, see its
// README) into a real Prometheus with promtool, reads them back through
// `ebbflow simulate`'s reader (the adapter's rules and PromQL) and replays
// them through the autoscaler's evaluation (package simulate): the reactive
// HPA at several targets, the same with a forecast (each method), and the
// oracle, scored against a fixed pod capacity.
//
// The short run (TestForecastBenchShort) is part of the integration tests;
// the long ones have the build tag forecastbench: TestForecastBenchFull
// (`make bench-forecast`) writes the tables of docs/benchmarks.md,
// TestForecastStudy the start-up, lead and tolerance sweep, and
// TestForecastWeekly the daily against the weekly season (the last two
// replay straight from the grid, not through Prometheus). The held-out
// bench (issue 28 §1; heldout.go, peers.go, `make bench-forecast-heldout`,
// TestForecastHeldOut) replays the traces of testdata/traces, which
// nothing in the product was chosen on, held on 1-minute steps: the
// reactive frontier, Ebbflow's forecast and four peers written here from
// their public descriptions, scored walk-forward (a training span, then a
// test span).
package forecastbench
