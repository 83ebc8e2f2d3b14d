package prom

import (
	"encoding/json"

	"github.com/prometheus/common/model"
)

// decodeVector decodes the result array of a vector answer. The common shape,
// samples of plain ASCII strings ({"metric":{...},"value":[time,"value"]}), is
// read in one pass (plainVector); anything else (escapes, non-ASCII, native
// histograms, other keys) goes through encoding/json and model.Sample, which
// plainVector agrees with on the shape it accepts.
func decodeVector(b []byte) (model.Vector, error) {
	if v, ok := plainVector(b); ok {
		return v, nil
	}
	var v model.Vector
	err := json.Unmarshal(b, &v)
	return v, err
}

// plainVector reads a JSON array of plain samples; ok is false, and the
// vector nil, for any other input.
func plainVector(b []byte) (_ model.Vector, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	v := model.Vector{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return v, skipSpace(b, i+1) == len(b)
	}
	for {
		s, next, ok := plainSample(b, i)
		if !ok {
			return nil, false
		}
		v = append(v, s)
		var done bool
		if i, done, ok = afterItem(b, next, ']'); !ok {
			return nil, false
		}
		if done {
			return v, skipSpace(b, i) == len(b)
		}
	}
}

// plainSample reads {"metric":{...},"value":[time,"value"]} (keys in either
// order, each once) starting at b[i].
func plainSample(b []byte, i int) (_ *model.Sample, next int, ok bool) {
	if i >= len(b) || b[i] != '{' {
		return nil, i, false
	}
	s := &model.Sample{}
	var seenMetric, seenValue bool
	i = skipSpace(b, i+1)
	for {
		key, j, ok := plainKey(b, i)
		if !ok {
			return nil, i, false
		}
		switch {
		case string(key) == "metric" && !seenMetric:
			s.Metric, j, ok = plainMetric(b, j)
			seenMetric = true
		case string(key) == "value" && !seenValue:
			j, ok = plainPair(b, j, s)
			seenValue = true
		default:
			return nil, i, false
		}
		var done bool
		if ok {
			i, done, ok = afterItem(b, j, '}')
		}
		if !ok {
			return nil, i, false
		}
		if done {
			return s, i, seenMetric && seenValue
		}
	}
}

// plainMetric reads an object of plain strings starting at b[i].
func plainMetric(b []byte, i int) (model.Metric, int, bool) {
	if i >= len(b) || b[i] != '{' {
		return nil, i, false
	}
	m := model.Metric{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return m, i + 1, true
	}
	for {
		name, j, ok := plainKey(b, i)
		if !ok {
			return nil, i, false
		}
		value, j, ok := plainString(b, j)
		if !ok {
			return nil, i, false
		}
		if _, dup := m[model.LabelName(name)]; dup {
			return nil, i, false
		}
		m[model.LabelName(name)] = model.LabelValue(value)
		var done bool
		if i, done, ok = afterItem(b, j, '}'); !ok || done {
			return m, i, ok
		}
	}
}

// plainPair reads [time,"value"] starting at b[i] into s, with model.Time's
// and model.SampleValue's own parsing.
func plainPair(b []byte, i int, s *model.Sample) (int, bool) {
	if i >= len(b) || b[i] != '[' {
		return i, false
	}
	i = skipSpace(b, i+1)
	start := i
	for i < len(b) && (b[i] == '.' || b[i] == '-' || b[i] == '+' || b[i] == 'e' || b[i] == 'E' || (b[i] >= '0' && b[i] <= '9')) {
		i++
	}
	if i == start || s.Timestamp.UnmarshalJSON(b[start:i]) != nil {
		return i, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ',' {
		return i, false
	}
	i = skipSpace(b, i+1)
	_, end, ok := plainString(b, i)
	if !ok || s.Value.UnmarshalJSON(b[i:end]) != nil {
		return i, false
	}
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ']' {
		return i, false
	}
	return i + 1, true
}

// plainKey reads an object's key and its colon starting at b[i]; next is
// the start of the value.
func plainKey(b []byte, i int) (_ []byte, next int, ok bool) {
	key, j, ok := plainString(b, i)
	if !ok {
		return nil, j, false
	}
	j = skipSpace(b, j)
	if j >= len(b) || b[j] != ':' {
		return nil, j, false
	}
	return key, skipSpace(b, j+1), true
}

// afterItem reads what follows an item of an array or object closed by
// closer: a comma (more follows, i after it) or closer (done, i after it).
func afterItem(b []byte, i int, closer byte) (next int, done, ok bool) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return i, false, false
	}
	switch b[i] {
	case ',':
		return skipSpace(b, i+1), false, true
	case closer:
		return i + 1, true, true
	}
	return i, false, false
}

// plainString returns the content of the string starting at b[i] and the
// index after it; ok is false unless it is a string of printable ASCII
// without escapes.
func plainString(b []byte, i int) (_ []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, j, false
		}
	}
	return nil, len(b), false
}
