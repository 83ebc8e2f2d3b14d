package forecast

import "time"

// Merge is h with recent laid over it: h's values before recent's start,
// then recent's, of which it keeps the last keep. It is how a
// history read again only for its last minutes joins the one read before.
// false when the two are not on one grid (another step, or starts apart
// by other than a whole number of steps) or recent starts more than one
// step after h's end (a gap merging would hide): then read it whole.
func (h Series) Merge(recent Series, keep time.Duration) (Series, bool) {
	step := h.Step
	if step <= 0 || recent.Step != step || len(recent.Values) == 0 {
		return Series{}, false
	}
	off := recent.Start.Sub(h.Start)
	if off%step != 0 {
		return Series{}, false
	}
	k := int(off / step)
	switch {
	case k > len(h.Values):
		return Series{}, false
	case k < 0:
		k = 0
		h = Series{Start: recent.Start, Step: step}
	}
	values := make([]float64, 0, k+len(recent.Values))
	values = append(append(values, h.Values[:k]...), recent.Values...)
	drop := max(len(values)-(int(keep/step)+1), 0)
	return Series{Start: h.Start.Add(time.Duration(drop) * step), Step: step, Values: values[drop:]}, true
}
