package forecast

// TEMPORARY: experiment knobs, parsed from Method "X/level=10m/q=0.75/agg=leadmax".

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

type knobs struct {
	level time.Duration
	q     float64
	agg   string
	win   time.Duration
	k     int
	perfect string
}

func parseKnobs(m Method) (Method, *knobs) {
	parts := strings.Split(string(m), "/")
	if len(parts) == 1 {
		return m, nil
	}
	kn := &knobs{q: 0.5, agg: "mean"}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "level":
			kn.level, _ = time.ParseDuration(v)
		case "q":
			kn.q, _ = strconv.ParseFloat(v, 64)
		case "agg":
			kn.agg = v
		case "win":
			kn.win, _ = time.ParseDuration(v)
		case "perfect":
			kn.perfect = v
		case "k":
			kn.k, _ = strconv.Atoi(v)
		}
	}
	return Method(parts[0]), kn
}

func quantile(q float64) func([]float64) float64 {
	return func(vs []float64) float64 {
		slices.Sort(vs)
		if len(vs) == 1 {
			return vs[0]
		}
		x := q * float64(len(vs)-1)
		i := int(x)
		if i >= len(vs)-1 {
			return vs[len(vs)-1]
		}
		w := x - float64(i)
		return vs[i]*(1-w) + vs[i+1]*w
	}
}

// perfectOf reads the future (the replay's slice capacity): the peak
// ("peak") or the value ("at") of the actual load over (now, now+lead].
func perfectOf(h History, req Request, how string) Forecast {
	all := h.Values[:cap(h.Values)]
	i := int(req.Now.Sub(h.Start) / h.Step)
	j := int(req.Now.Add(req.Lead).Sub(h.Start) / h.Step)
	j = min(j, len(all)-1)
	m, ok := 0.0, false
	for k := i + 1; k <= j; k++ {
		if how == "at" && k != j {
			continue
		}
		if finite(all[k]) && (!ok || all[k] > m) {
			m, ok = all[k], true
		}
	}
	if !ok {
		return none(ReasonNoSeasonData, "no future")
	}
	return Forecast{OK: true, Value: m, Seasons: 1}
}
