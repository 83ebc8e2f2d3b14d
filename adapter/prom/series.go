package prom

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// decodeSeriesStream reads a /api/v1/series response from r and calls fn for each
// series without holding more than one series in memory.
func decodeSeriesStream(r io.Reader, fn func(string, []string) error) error {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	var status, errType, errMsg string
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return err
		}
		switch key {
		case "status":
			status, err = stringToken(dec)
		case "errorType":
			errType, err = stringToken(dec)
		case "error":
			errMsg, err = stringToken(dec)
		case "data":
			err = decodeSeriesArray(dec, fn)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return err
		}
	}
	if status != "success" {
		return &APIError{StatusCode: 200, Type: errType, Message: errMsg}
	}
	return nil
}

func decodeSeriesArray(dec *json.Decoder, fn func(string, []string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("decode series: %w", err)
	}
	if tok == nil { // "data": null
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("decode series: want array, got %v", tok)
	}
	var raw json.RawMessage
	names := make([]string, 0, 16)
	in := interner{}
	for dec.More() {
		raw = raw[:0]
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("decode series: %w", err)
		}
		var metric string
		names, metric, err = labelNames(raw, names[:0], in)
		if err != nil {
			return err
		}
		slices.Sort(names)
		if err := fn(metric, names); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

// interner returns one string per distinct label name or metric name, so that
// decoding a series allocates nothing once its names have been seen.
type interner map[string]string

const maxInterned = 1 << 14

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}

// labelNames parses one series, a JSON object of strings already validated by the
// decoder, appending its label names but __name__ to names and returning __name__'s
// value.
func labelNames(obj []byte, names []string, in interner) ([]string, string, error) {
	var metric string
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return names, "", fmt.Errorf("decode series: %w: want object", errUnexpectedToken)
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] != '}' {
		key, next, err := jsonString(obj, i)
		if err != nil {
			return names, "", err
		}
		i = skipSpace(obj, next)
		if i >= len(obj) || obj[i] != ':' {
			return names, "", fmt.Errorf("decode series: %w: want ':'", errUnexpectedToken)
		}
		value, next, err := jsonString(obj, skipSpace(obj, i+1))
		if err != nil {
			return names, "", err
		}
		if string(key) == "__name__" {
			metric = in.get(value)
		} else {
			names = append(names, in.get(key))
		}
		i = skipSpace(obj, next)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return names, metric, nil
}

// jsonString returns the content of the JSON string starting at obj[i] (unescaped,
// which allocates only when it has escapes) and the index after it.
func jsonString(obj []byte, i int) ([]byte, int, error) {
	if i >= len(obj) || obj[i] != '"' {
		return nil, i, fmt.Errorf("decode series: %w: want string", errUnexpectedToken)
	}
	escaped := false
	for j := i + 1; j < len(obj); j++ {
		switch obj[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			if !escaped {
				return obj[i+1 : j], j + 1, nil
			}
			var s string
			if err := json.Unmarshal(obj[i:j+1], &s); err != nil {
				return nil, j + 1, fmt.Errorf("decode series: %w", err)
			}
			return []byte(s), j + 1, nil
		}
	}
	return nil, len(obj), fmt.Errorf("decode series: %w: unterminated string", errUnexpectedToken)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

var errUnexpectedToken = errors.New("unexpected token")

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("decode series: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("decode series: %w: want %q, got %v", errUnexpectedToken, want, tok)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("decode series: %w", err)
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("decode series: %w: want string, got %v", errUnexpectedToken, tok)
	}
	return s, nil
}
