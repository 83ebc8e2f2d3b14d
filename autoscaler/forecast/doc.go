// Package forecast predicts a metric's value some lead ahead from its own
// history with a daily or weekly season. It is pure: a Series (the history,
// a regular grid of values, NaN where nothing was recorded) and a Request in, a
// Forecast (a value, or the reason there is none) out.
//
// Methods (Method):
//
//   - SeasonalNaive: the value one season before the target time (the
//     baseline; one bad day in the past is copied as is).
//   - LevelCorrected: each of the last Seasons seasons' value at the target
//     time, scaled by the recent level (the mean of the history's last Level,
//     by default 5 minutes or 3 history steps when longer, with
//     Request.Latest when the history is older) over the level of the same
//     window that season
//     (the ratio bounded to [1/4, 4]), then the median of those.
//   - SeasonalMax: the peak of each past season over the lead window, then a
//     trimmed maximum across seasons (the largest season is dropped when
//     there are three or more, the smallest kept of two), so one spike does
//     not dominate and an outage at zero is never the maximum.
//   - HoltWinters: additive Holt-Winters fitted on the last Seasons seasons
//     averaged to 288 buckets a season, with fixed smoothing (α 0.2, β 0.01,
//     γ 0.3).
//   - LevelPeak (the default of ebbflow-autoscaler): what the pods started
//     now must meet — each of the last Seasons seasons' peak over the
//     start-up window ahead and Window after it ([target - Lead, target +
//     Window], target = Now + Lead), scaled by the recent level over that
//     season's level as LevelCorrected does, then the median of those.
//
// Backtest (backtest.go): BacktestOf replays a forecast over the last days
// of its own history, one forecast per history step from the history
// before it, and scores three paths against the need (whole pods of Unit):
// the metric's target alone, the same floored by the forecast, and the
// target lowered until it costs what the floor costs (the frontier).
// Backtest.PaysOff says the floor removed enough of the shortfall for its
// cost; ebbflow-autoscaler applies a forecast only then (mode Auto).
//
// Robustness: less history than one season (before Now) gives no forecast,
// with ReasonShortHistory; a season whose window holds no sample is skipped;
// non-finite samples are missing values; the result is never NaN, infinite
// or negative. Bounds: only the last MaxPoints values of a history and at
// most MaxSeasons seasons are read, so one forecast costs at most
// O(MaxPoints) time and O(Seasons × 288) memory whatever the history's
// length; the seasonal methods read only the windows they need.
package forecast
