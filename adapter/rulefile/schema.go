package rulefile

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// shapeKind is what a YAML value must look like.
type shapeKind int

const (
	shapeString shapeKind = iota
	shapeBool
	shapeInt
	shapeDuration
	shapeStruct
	shapeList
	shapeMap
)

// shape is the expected form of a YAML value, derived from the Go types so that the
// strict check and the decoder can never disagree about which keys exist.
type shape struct {
	kind   shapeKind
	fields map[string]*shape // shapeStruct: by YAML key
	keys   []string          // shapeStruct: YAML keys in declaration order
	elem   *shape            // shapeList, shapeMap: the element
}

// configShape is the shape of a whole rule file. It is never modified.
var configShape = shapeOf(reflect.TypeFor[File]())

// shapeOf derives the shape of t. It panics on a type the rule file cannot hold, which
// only a change to types.go can cause (and TestConfigShape catches).
func shapeOf(t reflect.Type) *shape {
	if t == reflect.TypeFor[model.Duration]() {
		return &shape{kind: shapeDuration}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return shapeOf(t.Elem())
	case reflect.String:
		return &shape{kind: shapeString}
	case reflect.Bool:
		return &shape{kind: shapeBool}
	case reflect.Int:
		return &shape{kind: shapeInt}
	case reflect.Slice:
		return &shape{kind: shapeList, elem: shapeOf(t.Elem())}
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			return &shape{kind: shapeMap, elem: shapeOf(t.Elem())}
		}
	case reflect.Struct:
		s := &shape{kind: shapeStruct, fields: map[string]*shape{}}
		for i := range t.NumField() {
			f := t.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "" {
				key = strings.ToLower(f.Name)
			}
			if key != "-" && f.IsExported() {
				s.fields[key] = shapeOf(f.Type)
				s.keys = append(s.keys, key)
			}
		}
		return s
	}
	panic(fmt.Sprintf("config: rule file cannot hold a %s", t))
}

// walker checks a YAML node tree against a shape and collects every problem.
type walker struct {
	errs []FieldError
	// warns are what the decoder reads past and prometheus-adapter accepts.
	warns []FieldError
	// checked records anchored nodes already checked against a shape: each is checked
	// (and its problems reported) once, however often it is aliased, so that alias
	// bombs stay linear.
	checked map[checkedAlias]bool
}

type checkedAlias struct {
	node  *yaml.Node
	shape *shape
}

func newWalker() *walker {
	return &walker{checked: map[checkedAlias]bool{}}
}

func (w *walker) add(n *yaml.Node, path, format string, args ...any) {
	w.errs = append(w.errs, FieldError{
		Field:   path,
		Line:    n.Line,
		Column:  n.Column,
		Message: fmt.Sprintf(format, args...),
	})
}

// walk checks n, found at path, against s.
func (w *walker) walk(n *yaml.Node, s *shape, path string) {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil || n.Alias.Kind == yaml.AliasNode {
			return
		}
		n = n.Alias
	}
	if n.Anchor != "" {
		seen := checkedAlias{node: n, shape: s}
		if w.checked[seen] {
			return
		}
		w.checked[seen] = true
	}
	if isNull(n) {
		return // null is the zero value of every field
	}
	switch s.kind {
	case shapeString:
		w.scalar(n, path, "a string")
	case shapeBool:
		if w.scalar(n, path, "true or false") {
			w.boolean(n, path)
		}
	case shapeInt:
		if w.scalar(n, path, "an integer") {
			if _, err := strconv.Atoi(n.Value); err != nil || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
				w.add(n, path, "expected an integer, found %q", n.Value)
			}
		}
	case shapeDuration:
		if w.scalar(n, path, "a duration") {
			if _, err := model.ParseDuration(n.Value); err != nil {
				w.add(n, path, "expected a duration such as 5m or 30s, found %q", n.Value)
			}
		}
	case shapeList:
		if n.Kind != yaml.SequenceNode {
			w.add(n, path, "expected a list, found %s", describeNode(n))
			return
		}
		for i, item := range n.Content {
			w.walk(item, s.elem, fmt.Sprintf("%s[%d]", path, i))
		}
	case shapeMap, shapeStruct:
		w.mapping(n, s, path)
	}
}

// yamlBooleans are the unquoted words read as booleans: YAML 1.2's true and false and,
// because prometheus-adapter reads rule files as YAML 1.1 (gopkg.in/yaml.v2),
// y/n/yes/no/on/off, in the spellings YAML gives each.
var yamlBooleans = map[string]bool{
	"true": true, "True": true, "TRUE": true, "false": false, "False": false, "FALSE": false,
	"y": true, "Y": true, "n": false, "N": false,
	"yes": true, "Yes": true, "YES": true, "no": false, "No": false, "NO": false,
	"on": true, "On": true, "ON": true, "off": false, "Off": false, "OFF": false,
}

// boolean checks the one rule for booleans: an unquoted word of yamlBooleans. A
// quoted value is a string, whatever it says ("false" as much as "no").
func (w *walker) boolean(n *yaml.Node, path string) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		w.add(n, path, "expected true or false, found the string %q (remove the quotes)", n.Value)
		return
	}
	if _, ok := yamlBooleans[n.Value]; !ok {
		w.add(n, path, "expected true or false, found %q", n.Value)
	}
}

// scalar reports whether n is a scalar, adding an error if not.
func (w *walker) scalar(n *yaml.Node, path, want string) bool {
	if n.Kind != yaml.ScalarNode {
		w.add(n, path, "expected %s, found %s", want, describeNode(n))
		return false
	}
	return true
}

// mapping checks a mapping's keys (unknown, duplicate, not strings) and values.
func (w *walker) mapping(n *yaml.Node, s *shape, path string) {
	if n.Kind != yaml.MappingNode {
		w.add(n, path, "expected a mapping, found %s", describeNode(n))
		return
	}
	first := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if key.Kind == yaml.AliasNode && key.Alias != nil {
			key = key.Alias
		}
		if key.Kind == yaml.ScalarNode && key.Value == "<<" && key.ShortTag() == "!!merge" {
			w.merge(value, s, path)
			continue
		}
		if s.kind == shapeMap && isNull(key) {
			// prometheus-adapter reads a null key as the empty string; the decoder
			// drops it.
			w.warns = append(w.warns, FieldError{Field: path, Line: key.Line, Column: key.Column,
				Message: "a null key is ignored (prometheus-adapter reads it as an empty label name, which no series carries)"})
			continue
		}
		if key.Kind != yaml.ScalarNode || isNull(key) {
			w.add(key, path, "expected a string key, found %s", describeNode(key))
			continue
		}
		keyPath := joinPath(path, key.Value)
		if prev, dup := first[key.Value]; dup {
			w.add(key, keyPath, "duplicate key %q (first at line %d)", key.Value, prev.Line)
			continue
		}
		first[key.Value] = key
		elem := s.elem
		if s.kind == shapeStruct {
			if elem = s.fields[key.Value]; elem == nil {
				w.add(key, keyPath, "unknown key %q%s", key.Value, suggestKey(key.Value, s.keys))
				continue
			}
		}
		w.walk(value, elem, keyPath)
	}
}

// merge checks the value of a YAML merge key ("<<: *base"), which must be a mapping or
// a list of mappings, each holding keys of the mapping it is merged into.
func (w *walker) merge(value *yaml.Node, s *shape, path string) {
	if value.Kind == yaml.SequenceNode {
		for _, item := range value.Content {
			w.walk(item, s, path)
		}
		return
	}
	w.walk(value, s, path)
}

// describeNode names what a node is, for "expected X, found Y" messages.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	if isNull(n) {
		return "null"
	}
	return strconv.Quote(n.Value)
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// joinPath appends key to a YAML path: a.b for plain keys, a["x.y"] otherwise.
func joinPath(path, key string) string {
	switch {
	case !plainKey.MatchString(key):
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// suggestKey returns ` (did you mean "x"?)` for a near miss, else the known keys.
func suggestKey(key string, known []string) string {
	best, bestDist := "", 3 // only suggest within an edit distance of 2
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (known keys: %s)", strings.Join(known, ", "))
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = slices.Min([]int{prev[j] + 1, cur[j-1] + 1, prev[j-1] + cost})
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
