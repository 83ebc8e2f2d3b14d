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
// duplicate keys, values of the wrong type (a list where a mapping belongs, "maybe" or a
// quoted "true" for a boolean, "5 minutes" for a duration) and keys that are not strings:
// what prometheus-adapter's loader (gopkg.in/yaml.v2's UnmarshalStrict) refuses too.
// What that loader reads past is accepted the same way and reported by Warnings: of a
// file with more than one YAML document only the first is read, and a null key of a
// mapping (an override's label) is ignored. Anchors, aliases and merge keys work as in
// YAML.
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
	root, rest, err := parseFirstDocument(data)
	if err != nil {
		return nil, err
	}
	cfg := &File{}
	if rest != nil {
		rest.Message = "only the first YAML document is read (as prometheus-adapter does); what follows is ignored"
		cfg.loadWarnings = append(cfg.loadWarnings, *rest)
	}
	if root == nil {
		return cfg, nil
	}
	w := newWalker()
	w.walk(root, configShape, "")
	cfg.loadWarnings = append(cfg.loadWarnings, w.warns...)
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
// document is empty. A second document that is not empty is an error.
func parseDocument(data []byte, what string) (*yaml.Node, error) {
	root, rest, err := parseFirstDocument(data)
	if err != nil {
		return nil, err
	}
	if rest != nil {
		return nil, LoadErrors{{Line: rest.Line, Column: rest.Column, Message: what + " holds one YAML document, found a second one"}}
	}
	return root, nil
}

// parseFirstDocument returns the root node of the first document in data (nil if it
// is empty) and, when more follows, a FieldError locating it: a second document that
// is not empty, or a syntax error after the first document.
func parseFirstDocument(data []byte) (*yaml.Node, *FieldError, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, nil
		}
		return nil, nil, syntaxErrors(err)
	}
	var rest *FieldError
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		rest = &syntaxErrors(err)[0]
	case len(next.Content) > 0 && !isNull(next.Content[0]):
		rest = &FieldError{Line: next.Content[0].Line, Column: next.Content[0].Column}
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, rest, nil
	}
	return doc.Content[0], rest, nil
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
