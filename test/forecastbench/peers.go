package forecastbench

import (
	"math"
	"math/cmplx"
	"slices"
	"time"
)

// A Peer is an autoscaler users would pick instead of Ebbflow's forecast,
// written here from its public description (no code of the project): given
// the load at each step (NaN: not recorded) it returns, causally (entry i
// from loads[:i+1] only), the load it has the HPA scale for at each step
// (NaN: no prediction, the HPA then scales on the load alone). The bench
// gives the HPA the prediction as a second External metric with the same
// per-pod target, so the HPA keeps the larger of the two proposals, as
// Crane's EffectiveHorizontalPodAutoscaler does with its prediction
// metric; PHPA's predicted replicas are turned into load (replicas ×
// per-pod target, the same as PHPA's decisionType maximum); the AWS-style
// policy's hourly capacity is a scale-out-only floor the same way.
type Peer struct {
	Name    string
	Predict func(loads []float64, p PeerContext) []float64
}

// PeerContext is what a peer knows besides the load: the grid's step and
// start, the pod start-up and the per-pod target (load one pod serves at
// the HPA's target).
type PeerContext struct {
	Step    time.Duration
	Start   time.Time
	Startup time.Duration
	PerPod  float64
}

// Peers are the baselines of the held-out bench.
var Peers = []Peer{
	{Name: "Crane EHPA (DSP)", Predict: CraneDSP},
	{Name: "PHPA Holt-Winters", Predict: PHPAHoltWinters},
	{Name: "PHPA linear", Predict: PHPALinear},
	{Name: "AWS-style predictive", Predict: AWSPredictive},
}

// Crane's DSP predictor and EHPA, from gocrane/crane's
// docs/tutorials/timeseriees-forecasting-by-dsp.md and
// using-effective-hpa-to-scaling-with-effectiveness.md: the history of
// historyLength (the EHPA example's 3d) sampled every 60 s, missing samples
// filled linearly, outliers beyond P99.9/P0.1 replaced by the previous
// sample; the period is one of the fixed candidates (1d; 7d needs 14 days
// of history, more than 3d) whose spectral amplitude exceeds the P99 of the
// largest amplitude of permuted series and whose circular autocorrelation
// is on a peak (rising before, falling after by linear regression); the
// default estimator fft (marginFraction 0.2, lowAmplitudeThreshold 1.0,
// highFrequencyThreshold 0.05 Hz, 10 to 20 spectrum items) keeps the
// largest components, and the inverse transform's last period, × 1.2, is
// the next period's prediction; EHPA's prediction metric is the largest
// predicted value in the next predictionWindowSeconds (3600). Two
// simplifications: the permutation threshold is the closed form for a
// permuted (white) series, and the prediction is recomputed every hour.
const (
	craneHistory         = 3 * 24 * time.Hour
	craneWindow          = time.Hour
	craneRefresh         = time.Hour
	craneMargin          = 0.2
	craneLowAmplitude    = 1.0
	craneHighFrequency   = 0.05
	craneMinItems        = 10
	craneMaxItems        = 20
	cranePeakRegressionW = 0.1 // of the period, each side of the lag
)

// CraneDSP is Crane's EHPA prediction metric (see the constants above).
func CraneDSP(loads []float64, p PeerContext) []float64 {
	out := nanSlice(len(loads))
	n := int(craneHistory / p.Step)
	period := int(24 * time.Hour / p.Step)
	window := int(craneWindow / p.Step)
	refresh := max(int(craneRefresh/p.Step), 1)
	for r := n; r < len(loads); r += refresh {
		pred := craneForecast(loads[r-n+1:r+1], period, p.Step, refresh+window)
		if pred == nil {
			continue
		}
		for i := r; i < min(r+refresh, len(loads)); i++ {
			out[i] = slices.Max(pred[i-r : i-r+window+1])
		}
	}
	return out
}

// craneForecast returns the next ahead values after history (nil when no
// period is found or too little is recorded).
func craneForecast(history []float64, period int, step time.Duration, ahead int) []float64 {
	x, ok := filled(history)
	if !ok {
		return nil
	}
	removeOutliers(x)
	spectrum := fft(toComplex(x))
	n := len(x)
	if !cranePeriodic(x, spectrum, period) {
		return nil
	}
	type item struct {
		k   int
		amp float64
	}
	var items []item
	for k := 1; k <= n/2; k++ {
		amp := 2 * cmplx.Abs(spectrum[k]) / float64(n)
		freq := float64(k) / (float64(n) * step.Seconds())
		if amp >= craneLowAmplitude && freq <= craneHighFrequency {
			items = append(items, item{k, amp})
		}
	}
	slices.SortFunc(items, func(a, b item) int {
		switch {
		case a.amp > b.amp:
			return -1
		case a.amp < b.amp:
			return 1
		}
		return a.k - b.k
	})
	if len(items) > craneMaxItems {
		items = items[:craneMaxItems]
	}
	if len(items) < craneMinItems {
		return nil
	}
	mean := real(spectrum[0]) / float64(n)
	out := make([]float64, ahead)
	for t := range out {
		at := n - period + t%period // the reconstruction's last period, repeated
		v := mean
		for _, it := range items {
			c := spectrum[it.k]
			v += 2 / float64(n) * (real(c)*math.Cos(2*math.Pi*float64(it.k*at)/float64(n)) - imag(c)*math.Sin(2*math.Pi*float64(it.k*at)/float64(n)))
		}
		out[t] = max(v, 0) * (1 + craneMargin)
	}
	return out
}

// cranePeriodic says whether x repeats with period (in samples): the
// amplitude at the period's frequency above the P99 of the largest
// amplitude of a permutation of x, and the circular autocorrelation at
// the period on a peak.
func cranePeriodic(x []float64, spectrum []complex128, period int) bool {
	n := len(x)
	if n < 2*period || n%period != 0 {
		return false
	}
	var mean, variance float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	variance /= float64(n)
	if variance == 0 {
		return false
	}
	// A permutation is white: |X(k)|² is about exponential with mean
	// n·variance, and the largest of n/2 of them stays below
	// n·variance·ln(n/2/0.01) with probability 0.99.
	threshold := math.Sqrt(float64(n) * variance * math.Log(float64(n/2)/0.01))
	if cmplx.Abs(spectrum[n/period]) <= threshold {
		return false
	}
	power := make([]complex128, n)
	for k, c := range spectrum {
		power[k] = complex(real(c)*real(c)+imag(c)*imag(c), 0)
	}
	acf := ifft(power) // circular autocovariance × n
	w := max(int(cranePeakRegressionW*float64(period)), 2)
	if period+w >= n {
		return false
	}
	return slope(acf, period-w, period) > 0 && slope(acf, period, period+w) < 0
}

// slope is the least-squares slope of real(v[a..b]) against the index.
func slope(v []complex128, a, b int) float64 {
	var n, sx, sy, sxx, sxy float64
	for i := a; i <= b; i++ {
		x, y := float64(i), real(v[i])
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// filled is history with missing samples filled linearly between known
// ones (held at the ends); false when fewer than half are known.
func filled(history []float64) ([]float64, bool) {
	x := slices.Clone(history)
	known := 0
	last := -1
	for i, v := range x {
		if math.IsNaN(v) {
			continue
		}
		known++
		switch {
		case last < 0:
			for j := 0; j < i; j++ {
				x[j] = v
			}
		case i > last+1:
			for j := last + 1; j < i; j++ {
				x[j] = x[last] + (v-x[last])*float64(j-last)/float64(i-last)
			}
		}
		last = i
	}
	if 2*known < len(x) {
		return nil, false
	}
	for j := last + 1; j < len(x); j++ {
		x[j] = x[last]
	}
	return x, true
}

// removeOutliers replaces the samples above the P99.9 or below the P0.1
// of x by the previous sample.
func removeOutliers(x []float64) {
	sorted := slices.Sorted(slices.Values(x))
	lo, hi := sorted[int(0.001*float64(len(x)-1))], sorted[int(math.Ceil(0.999*float64(len(x)-1)))]
	for i := 1; i < len(x); i++ {
		if x[i] > hi || x[i] < lo {
			x[i] = x[i-1]
		}
	}
}

// PHPA is jthomperoo/predictive-horizontal-pod-autoscaler: each sync it
// stores the replicas the HPA calculates, fits its models to the stored
// replicas and, with decisionType maximum, scales to the largest of the
// calculated and predicted replicas. Holt-Winters with the README
// example's alpha = beta = gamma = 0.9, additive trend and season,
// storedSeasons 4, and seasonalPeriods one day of syncs (the sync is the
// bench's step); predictions start after two seasons (statsmodels'
// heuristic start). The fit here runs online rather than refitting the
// stored seasons each sync.
const (
	phpaAlpha, phpaBeta, phpaGamma = 0.9, 0.9, 0.9
	// phpaHistory is linear regression's historySize (the README example's);
	// its lookAhead is the pod start-up plus one sync (users set it to
	// cover the start-up).
	phpaHistory = 6
)

// phpaReplicas is what the HPA calculates for load: ceil(load / perPod)
// (NaN when load is not recorded).
func phpaReplicas(load, perPod float64) float64 {
	return math.Ceil(load/perPod - 1e-9)
}

// PHPAHoltWinters is PHPA with its Holt-Winters model (see the constants).
func PHPAHoltWinters(loads []float64, p PeerContext) []float64 {
	out := nanSlice(len(loads))
	m := int(24 * time.Hour / p.Step)
	var stored []float64 // calculated replicas, one per sync with a value
	var level, trend float64
	var season []float64
	for i, v := range loads {
		if math.IsNaN(v) {
			continue
		}
		r := phpaReplicas(v, p.PerPod)
		stored = append(stored, r)
		t := len(stored) - 1
		switch {
		case t < 2*m-1:
			continue
		case t == 2*m-1:
			level, trend, season = hwStart(stored, m)
		default:
			s := season[t%m]
			prev := level
			level = phpaAlpha*(r-s) + (1-phpaAlpha)*(level+trend)
			trend = phpaBeta*(level-prev) + (1-phpaBeta)*trend
			season[t%m] = phpaGamma*(r-level) + (1-phpaGamma)*s
		}
		next := level + trend + season[(t+1)%m]
		out[i] = math.Max(math.Ceil(next-1e-9), 0) * p.PerPod
	}
	return out
}

// hwStart is the heuristic start of additive Holt-Winters from two
// seasons of m values, after fitting the second season.
func hwStart(x []float64, m int) (level, trend float64, season []float64) {
	var a, b float64
	for j := range m {
		a += x[j]
		b += x[m+j]
	}
	a, b = a/float64(m), b/float64(m)
	season = make([]float64, m)
	for j := range m {
		season[j] = (x[j] - a + x[m+j] - b) / 2
	}
	return b + (b-a)/float64(m)*float64(m-1)/2, (b - a) / float64(m), season
}

// PHPALinear is PHPA with its linear regression model: the last
// phpaHistory calculated replicas against time, read at lookAhead.
func PHPALinear(loads []float64, p PeerContext) []float64 {
	out := nanSlice(len(loads))
	ahead := float64(p.Startup+p.Step) / float64(p.Step)
	var xs, ys []float64
	for i, v := range loads {
		if math.IsNaN(v) {
			continue
		}
		xs, ys = append(xs, float64(i)), append(ys, phpaReplicas(v, p.PerPod))
		if len(xs) > phpaHistory {
			xs, ys = xs[1:], ys[1:]
		}
		if len(xs) < 2 {
			continue
		}
		var n, sx, sy, sxx, sxy float64
		for k := range xs {
			n, sx, sy, sxx, sxy = n+1, sx+xs[k], sy+ys[k], sxx+xs[k]*xs[k], sxy+xs[k]*ys[k]
		}
		b := (n*sxy - sx*sy) / (n*sxx - sx*sx)
		a := (sy - b*sx) / n
		out[i] = math.Max(math.Ceil(a+b*(float64(i)+ahead)-1e-9), 0) * p.PerPod
	}
	return out
}

// AWS-style predictive scaling, from the EC2 Auto Scaling documentation
// (PredictiveScalingConfiguration): a forecast of the load for each hour
// of the next 48 hours from up to 14 days of history (none before 24
// hours of it), capacity scheduled hourly for the forecast load at the
// target, each hour's capacity launched SchedulingBufferTime (default 300
// s) before the hour, scale-out only (it raises the floor; the dynamic
// policy — here the HPA — does the rest). The forecasting model itself is
// not public; here an hour's forecast is the mean over the history's days
// of that hour of day's mean load, and it is made again every 6 hours.
const (
	awsHistory  = 14 * 24 * time.Hour
	awsMinimum  = 24 * time.Hour
	awsBuffer   = 300 * time.Second
	awsRefresh  = 6 * time.Hour
	awsForecast = 48 * time.Hour
)

// AWSPredictive is the AWS-style policy's floor as load (see the
// constants).
func AWSPredictive(loads []float64, p PeerContext) []float64 {
	out := nanSlice(len(loads))
	hourOf := func(i int) time.Time { return p.Start.Add(time.Duration(i) * p.Step).Truncate(time.Hour) }
	// hourly means of the recorded load, by the hour's start
	sums, counts := map[time.Time]float64{}, map[time.Time]float64{}
	var made time.Time // when the current forecast was made
	forecast := map[time.Time]float64{}
	first := -1
	for i, v := range loads {
		now := p.Start.Add(time.Duration(i) * p.Step)
		if first < 0 && !math.IsNaN(v) {
			first = i
		}
		if first >= 0 && now.Sub(p.Start.Add(time.Duration(first)*p.Step)) >= awsMinimum && (made.IsZero() || now.Sub(made) >= awsRefresh) {
			made = now
			forecast = awsForecastAt(now, sums, counts)
		}
		if f, ok := forecast[now.Add(awsBuffer).Truncate(time.Hour)]; ok {
			out[i] = f
		}
		if !math.IsNaN(v) { // the current hour's samples so far, for later forecasts
			h := hourOf(i)
			sums[h] += v
			counts[h]++
		}
	}
	return out
}

// awsForecastAt forecasts each hour of the next awsForecast after now
// from the hourly means of the last awsHistory.
func awsForecastAt(now time.Time, sums, counts map[time.Time]float64) map[time.Time]float64 {
	out := map[time.Time]float64{}
	start := now.Truncate(time.Hour)
	for h := start; h.Before(now.Add(awsForecast)); h = h.Add(time.Hour) {
		var sum, n float64
		for back := h.Add(-24 * time.Hour); !back.Before(now.Add(-awsHistory)); back = back.Add(-24 * time.Hour) {
			if !back.Add(time.Hour).After(now) { // only complete past hours
				if c := counts[back]; c > 0 {
					sum += sums[back] / c
					n++
				}
			}
		}
		if n > 0 {
			out[h] = sum / n
		}
	}
	return out
}

func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

func toComplex(x []float64) []complex128 {
	out := make([]complex128, len(x))
	for i, v := range x {
		out[i] = complex(v, 0)
	}
	return out
}

// fft is the discrete Fourier transform of x (mixed radix, any length).
func fft(x []complex128) []complex128 {
	n := len(x)
	if n <= 1 {
		return slices.Clone(x)
	}
	p := smallestFactor(n)
	if p == n { // prime: the direct sum
		out := make([]complex128, n)
		for k := range out {
			for j, v := range x {
				out[k] += v * cmplx.Rect(1, -2*math.Pi*float64(k*j%n)/float64(n))
			}
		}
		return out
	}
	m := n / p
	subs := make([][]complex128, p)
	for r := range p {
		part := make([]complex128, m)
		for j := range m {
			part[j] = x[j*p+r]
		}
		subs[r] = fft(part)
	}
	out := make([]complex128, n)
	for k := range out {
		for r := range p {
			out[k] += subs[r][k%m] * cmplx.Rect(1, -2*math.Pi*float64(r*k%n)/float64(n))
		}
	}
	return out
}

// ifft is the inverse of fft.
func ifft(x []complex128) []complex128 {
	c := make([]complex128, len(x))
	for i, v := range x {
		c[i] = cmplx.Conj(v)
	}
	out := fft(c)
	for i, v := range out {
		out[i] = cmplx.Conj(v) / complex(float64(len(x)), 0)
	}
	return out
}

func smallestFactor(n int) int {
	for p := 2; p*p <= n; p++ {
		if n%p == 0 {
			return p
		}
	}
	return n
}
