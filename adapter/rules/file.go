package rules

// A rule file becomes compiled rules in one step: load (strict), validate (every
// problem at once), compile. The adapter, the `ebbflow config` commands and tests all
// go through Parse, so they accept and reject the same files.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// Set is a compiled rule file.
type Set struct {
	// File is the file as loaded.
	File *rulefile.File
	// Rules are the custom rules, then the external rules, in file order.
	Rules []*Rule
	// Resource are the compiled resourceRules; nil when the file has none.
	Resource *ResourceRules
	// Warnings are findings that do not make the file invalid.
	Warnings []rulefile.FieldError
	// Hash identifies the file content (sha256, hex).
	Hash string
}

// Options say what a rule file is checked against.
type Options struct {
	// Mapper resolves resources; nil means rulefile.DefaultRESTMapper().
	Mapper meta.RESTMapper
	// Backends are the named backends (besides rulefile.DefaultBackend) that rules
	// may select; a rule naming another is an error.
	Backends []string
	// AnyBackend accepts every well-formed backend name, for checking a rule file
	// without its backends file; Backends is then ignored.
	AnyBackend bool
}

// Parse loads, validates and compiles data, whose rules may use only the default
// backend. The error lists every problem found.
func Parse(data []byte, mapper meta.RESTMapper) (*Set, error) {
	return ParseWith(data, Options{Mapper: mapper})
}

// ParseWith is Parse with the backends that exist given in opts.
func ParseWith(data []byte, opts Options) (*Set, error) {
	mapper := opts.Mapper
	if mapper == nil {
		mapper = rulefile.DefaultRESTMapper()
	}
	cfg, err := rulefile.LoadPartial(data)
	if cfg == nil {
		return nil, err
	}
	known := opts.Backends
	switch {
	case opts.AnyBackend:
		known = nil
	case known == nil:
		known = []string{}
	}
	// What could be read is validated even when the file has unknown keys, so every
	// problem is reported at once.
	verr := rulefile.Validate(cfg, mapper)
	if berrs := rulefile.CheckBackends(cfg, known); len(berrs) > 0 {
		verr = errors.Join(verr, rulefile.ValidationErrors(berrs))
	}
	if err != nil || verr != nil {
		return nil, errors.Join(err, verr)
	}
	sum := sha256.Sum256(data)
	set := &Set{File: cfg, Warnings: rulefile.Warnings(cfg, mapper), Hash: hex.EncodeToString(sum[:])}
	for i, r := range cfg.Rules {
		c, err := Compile(r, i, Custom, mapper)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Describe("rules", i), err)
		}
		set.Rules = append(set.Rules, c)
	}
	for i, r := range cfg.ExternalRules {
		c, err := Compile(r, i, External, mapper)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Describe("externalRules", i), err)
		}
		set.Rules = append(set.Rules, c)
	}
	if cfg.ResourceRules != nil {
		rr, err := CompileResourceRules(*cfg.ResourceRules, mapper)
		if err != nil {
			return nil, err
		}
		set.Resource = rr
	}
	return set, nil
}

// ParseFileWith is ParseWith on the content of path.
func ParseFileWith(path string, opts Options) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rule file: %w", err)
	}
	return ParseWith(data, opts)
}

// Counts returns the number of custom and external rules.
func (s *Set) Counts() (custom, external int) {
	for _, r := range s.Rules {
		if r.Kind() == Custom {
			custom++
		} else {
			external++
		}
	}
	return custom, external
}
