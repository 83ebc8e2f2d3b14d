package rulefile

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load parses a rule file in prometheus-adapter's format, strictly.
//
// Every problem is reported at once, as LoadErrors, each with its YAML path and
// line:column: syntax errors, unknown keys (with a suggestion for near misses),
// duplicate keys, values of the wrong type (a list where a mapping belongs, "maybe" for
// a boolean, "5 minutes" for a duration) and non-string keys. A file with more than one
// YAML document is rejected (prometheus-adapter silently reads only the first). Anchors,
// aliases and merge keys work as in YAML.
//
// An empty file, or one holding only comments or null, gives an empty Config. Load does
// not check meaning (regular expressions, templates, resources); call Validate for that.
// The returned Config is the caller's.
func Load(data []byte) (*File, error) {
	cfg, err := LoadPartial(data)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// LoadPartial is Load, except that when the file's only problems leave its values
// readable (unknown keys, duplicate keys, booleans or durations out of grammar that
// still decode) it also returns what it read, so callers can validate the rest and
// report every problem at once. The Config is nil when nothing could be read.
func LoadPartial(data []byte) (*File, error) {
	root, err := parseDocument(data, "a rule file")
	if err != nil {
		return nil, err
	}
	cfg := &File{}
	if root == nil {
		return cfg, nil
	}
	w := newWalker()
	w.walk(root, configShape, "")
	if err := root.Decode(cfg); err != nil {
		if len(w.errs) > 0 {
			return nil, LoadErrors(w.errs)
		}
		return nil, decodeErrors(err)
	}
	if len(w.errs) > 0 {
		return cfg, LoadErrors(w.errs)
	}
	return cfg, nil
}

// parseDocument returns the root node of the only document in data, or nil if the
// document is empty.
func parseDocument(data []byte, what string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxErrors(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxErrors(err)
	case len(next.Content) > 0 && !isNull(next.Content[0]):
		return nil, LoadErrors{{
			Line:    next.Content[0].Line,
			Column:  next.Content[0].Column,
			Message: what + " holds one YAML document, found a second one",
		}}
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, nil
	}
	return doc.Content[0], nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// syntaxErrors turns a YAML parser error ("yaml: line 3: did not find expected key")
// into LoadErrors carrying the line.
func syntaxErrors(err error) LoadErrors {
	line, msg := splitYAMLLine(strings.TrimPrefix(err.Error(), "yaml: "))
	return LoadErrors{{Line: line, Message: "invalid YAML: " + msg}}
}

// decodeErrors turns a decoding error into LoadErrors, one per problem. The schema
// walk catches what the decoder would reject, so this is a safety net: it is reached
// for alias bombs ("excessive aliasing") and values the decoder rejects on its own.
func decodeErrors(err error) LoadErrors {
	var typeErr *yaml.TypeError
	if !errors.As(err, &typeErr) {
		return LoadErrors{{Message: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	out := make(LoadErrors, 0, len(typeErr.Errors))
	for _, e := range typeErr.Errors {
		line, msg := splitYAMLLine(e)
		out = append(out, FieldError{Line: line, Message: msg})
	}
	return out
}

// splitYAMLLine splits "line 3: msg" into 3 and "msg"; other text gives 0 and itself.
func splitYAMLLine(s string) (int, string) {
	rest, ok := strings.CutPrefix(s, "line ")
	if !ok {
		return 0, s
	}
	num, msg, ok := strings.Cut(rest, ": ")
	line, err := strconv.Atoi(num)
	if !ok || err != nil {
		return 0, s
	}
	return line, msg
}
