package rulefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
			if (w.Rule == "" && w.Field == "" && w.Line == 0) || w.Message == "" {
				t.Errorf("warning %+v names no rule, field or line, or says nothing", w)
			}
		}
	})
}

// FuzzParseBackends runs ParseBackends on arbitrary input: no panic or hang, every
// error the documented aggregate naming a field, and every accepted file has
// unique, well-formed names and http(s) URLs. Seeds in testdata/fuzz run in unit
// tests; `make fuzz` explores.
func FuzzParseBackends(f *testing.F) {
	for _, doc := range []string{
		"",
		"backends: [{name: a, url: 'http://a:9090/?dedup=true', headers: {X-Scope-OrgID: t}}]",
		"backends: [{name: a, url: 'https://a', basicAuth: {username: u, passwordFile: /p}, tokenFile: /t}]",
		"backends: [{name: default, url: ftp://x, verb: PUT, timeout: 5 minutes}]",
		"backends: [&a {name: a, url: 'http://a'}, *a, {<<: *a, name: b}]",
		"backends: [{name: a, url: 'http://a', headers: {'bad name': \"x\\r\\ny\", Authorization: b}}]",
		"backends: {name: a}\n---\nbackends: []",
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		bf, err := ParseBackends(data)
		if err != nil {
			var lerrs LoadErrors
			var verrs ValidationErrors
			switch {
			case errors.As(err, &verrs) && len(verrs) > 0:
				for _, e := range verrs {
					if e.Rule == "" && e.Field == "" && e.Line == 0 {
						t.Errorf("problem %q names no backend, field or position", e)
					}
				}
			case errors.As(err, &lerrs) && len(lerrs) > 0:
			default:
				t.Fatalf("ParseBackends error %v is neither LoadErrors nor ValidationErrors", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, b := range bf.Backends {
			if seen[b.Name] || !backendNameRE.MatchString(b.Name) || b.Name == DefaultBackend {
				t.Errorf("accepted backend name %q", b.Name)
			}
			seen[b.Name] = true
			if !strings.HasPrefix(b.URL, "http://") && !strings.HasPrefix(b.URL, "https://") {
				t.Errorf("accepted URL %q", b.URL)
			}
		}
	})
}
