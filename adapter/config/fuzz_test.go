package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad runs Load, Validate and Warnings on arbitrary input: none may panic or hang,
// and every error must be the documented aggregate. Seeds are the files in testdata
// and the documents below; `go test` runs them, `go test -fuzz FuzzLoad` explores.
func FuzzLoad(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files in testdata: %v", err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, doc := range []string{
		"",
		"rules: [{seriesQuery: a, name: {matches: '(a)(b)', as: '$1_$3${x}$$'}}]",
		"rules: [{resources: {template: '<<.Resource', overrides: {p: {resource: podz}}}}]",
		"externalRules: [{seriesQuery: q, resources: {namespaced: maybe}}]",
		"resourceRules: {window: -5m, cpu: {containerQuery: '<<range 99999999999>><<end>>'}}",
		"rules: [&a {seriesQuery: x}, *a, {<<: [*a, *a]}]",
		"a: &x [*x]",
		"rules:\n  - seriesFilters: [{is: '(', isNot: '['}]\n---\nrules: []\n",
		"rules: [{metricsQuery: '<<define \"t\">><<template \"t\">><<end>><<template \"t\">>'}]",
	} {
		f.Add([]byte(doc))
	}
	mapper := DefaultRESTMapper()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Load(data)
		if err != nil {
			var errs LoadErrors
			if !errors.As(err, &errs) || len(errs) == 0 || cfg != nil {
				t.Fatalf("Load = %v, %v; want nil and a non-empty LoadErrors", cfg, err)
			}
			return
		}
		if err := Validate(cfg, mapper); err != nil {
			var errs ValidationErrors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Validate error %v is not a non-empty ValidationErrors", err)
			}
			for _, e := range errs {
				if e.Rule == "" {
					t.Errorf("problem %q names no rule", e)
				}
			}
		}
		for _, w := range Warnings(cfg, mapper) {
			if w.Rule == "" || w.Message == "" {
				t.Errorf("warning %+v names no rule or says nothing", w)
			}
		}
	})
}
