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
	names := make([]string, 0, 16)
	for dec.More() {
		if err := expectDelim(dec, '{'); err != nil {
			return err
		}
		names = names[:0]
		var metric string
		for dec.More() {
			label, err := stringToken(dec)
			if err != nil {
				return err
			}
			value, err := stringToken(dec)
			if err != nil {
				return err
			}
			if label == "__name__" {
				metric = value
				continue
			}
			names = append(names, label)
		}
		if err := expectDelim(dec, '}'); err != nil {
			return err
		}
		slices.Sort(names)
		if err := fn(metric, names); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
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
