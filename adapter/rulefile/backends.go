package rulefile

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
)

// DefaultBackend is the name of the backend given by --prometheus-url and its
// connection flags. A rule without backend uses it; it cannot be redefined.
const DefaultBackend = "default"

// BackendsFile is the file given by --prometheus-backends-file: named Prometheus
// servers (or tenants of one) that rules select with their backend field.
type BackendsFile struct {
	Backends []Backend `yaml:"backends"`
}

// Backend says how to reach one Prometheus-compatible server. Secrets are never
// inline: tokens and passwords are read from files, re-read when they change.
type Backend struct {
	// Name is what rules write in backend: a DNS label (lower-case letters, digits,
	// '-', at most 63 bytes), unique, not "default".
	Name string `yaml:"name"`
	// URL of the HTTP API; its query parameters are sent with every request.
	URL string `yaml:"url"`
	// Verb is GET (the default; POST for long queries) or POST.
	Verb string `yaml:"verb"`
	// Timeout caps every request; 0 means --prometheus-timeout.
	Timeout model.Duration `yaml:"timeout"`
	// MaxConcurrentQueries caps this backend's requests in flight; 0 means
	// --max-concurrent-queries. Each backend has its own slots either way.
	MaxConcurrentQueries int `yaml:"maxConcurrentQueries"`
	// Headers are sent with every request, e.g. X-Scope-OrgID for a Mimir tenant.
	Headers map[string]string `yaml:"headers"`
	// CAFile verifies the server's certificate; empty means the system roots.
	CAFile string `yaml:"caFile"`
	// ClientCertFile and ClientKeyFile, together, authenticate with a certificate.
	ClientCertFile string `yaml:"clientCertFile"`
	ClientKeyFile  string `yaml:"clientKeyFile"`
	// TokenFile holds a bearer token, re-read on every request.
	TokenFile string `yaml:"tokenFile"`
	// BasicAuth authenticates with a user name and a password read from a file.
	BasicAuth *BasicAuth `yaml:"basicAuth"`
}

// BasicAuth is a user name and the file holding the password.
type BasicAuth struct {
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"passwordFile"`
}

// maxBackendConcurrency bounds a backend's maxConcurrentQueries (each slot may hold a
// goroutine and a connection).
const maxBackendConcurrency = 1024

var (
	backendsShape = shapeOf(reflect.TypeFor[BackendsFile]())
	// backendNameRE is an RFC 1123 DNS label.
	backendNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// headerNameRE is an HTTP token (RFC 9110).
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// LoadBackendsFile reads, strictly parses and validates a backends file. Every
// problem is reported at once, each naming its field (e.g. backends[1].url).
func LoadBackendsFile(path string) (*BackendsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read backends file: %w", err)
	}
	f, err := ParseBackends(data)
	if err != nil {
		return nil, fmt.Errorf("backends file %s:\n%w", path, err)
	}
	return f, nil
}

// ParseBackends parses a backends file as Load parses a rule file (unknown keys,
// wrong types and duplicate keys are errors with their positions), then checks the
// meaning of each backend with ValidateBackends.
func ParseBackends(data []byte) (*BackendsFile, error) {
	root, err := parseDocument(data, "a backends file")
	if err != nil {
		return nil, err
	}
	f := &BackendsFile{}
	var loadErrs []FieldError
	if root != nil {
		w := newWalker()
		w.walk(root, backendsShape, "")
		loadErrs = w.errs
		if err := root.Decode(f); err != nil {
			if len(loadErrs) > 0 {
				return nil, LoadErrors(loadErrs)
			}
			return nil, decodeErrors(err)
		}
	}
	// As for rule files, what could be read is validated too: every problem at once.
	errs := append(loadErrs, ValidateBackends(f)...)
	if len(errs) > 0 {
		return nil, ValidationErrors(errs)
	}
	return f, nil
}

// ValidateBackends checks every backend of f and returns every problem.
func ValidateBackends(f *BackendsFile) []FieldError {
	var errs []FieldError
	if len(f.Backends) == 0 {
		errs = append(errs, FieldError{Field: "backends", Message: "must list at least one backend"})
	}
	seen := map[string]int{}
	for i, b := range f.Backends {
		p := &problems{rule: fmt.Sprintf("backends[%d]", i)}
		checkBackendName(p, b.Name)
		if j, dup := seen[b.Name]; dup && b.Name != "" {
			p.add("name", "duplicate backend %q (first in backends[%d])", b.Name, j)
		} else {
			seen[b.Name] = i
		}
		checkBackendConnection(p, b)
		errs = append(errs, p.errs...)
	}
	return errs
}

func checkBackendName(p *problems, name string) {
	switch {
	case name == "":
		p.add("name", "must not be empty")
	case name == DefaultBackend:
		p.add("name", "%q is the backend of --prometheus-url and cannot be redefined", DefaultBackend)
	case !backendNameRE.MatchString(name):
		p.add("name", "%q must be a DNS label: lower-case letters, digits and '-', at most 63 bytes", shorten(name))
	}
}

func checkBackendConnection(p *problems, b Backend) {
	if u, err := url.Parse(b.URL); b.URL == "" {
		p.add("url", "must not be empty")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add("url", "must be an http or https URL with a host")
	} else if u.User != nil {
		p.add("url", "must not hold credentials; use basicAuth or tokenFile")
	}
	if b.Verb != "" && b.Verb != http.MethodGet && b.Verb != http.MethodPost {
		p.add("verb", "must be GET or POST, not %q", shorten(b.Verb))
	}
	if b.Timeout < 0 {
		p.add("timeout", "must not be negative")
	}
	if b.MaxConcurrentQueries < 0 || b.MaxConcurrentQueries > maxBackendConcurrency {
		p.add("maxConcurrentQueries", "must be between 0 (--max-concurrent-queries) and %d", maxBackendConcurrency)
	}
	for _, name := range sortedKeys(b.Headers) {
		switch {
		case !headerNameRE.MatchString(name):
			p.add(joinPath("headers", name), "is not an HTTP header name")
		case strings.EqualFold(name, "Authorization"):
			p.add(joinPath("headers", name), "use tokenFile or basicAuth, so the secret stays out of this file")
		case strings.ContainsAny(b.Headers[name], "\r\n\x00"):
			p.add(joinPath("headers", name), "value must not hold CR, LF or NUL")
		}
	}
	if (b.ClientCertFile == "") != (b.ClientKeyFile == "") {
		p.add("clientCertFile", "clientCertFile and clientKeyFile must be set together")
	}
	if ba := b.BasicAuth; ba != nil {
		if ba.Username == "" || ba.PasswordFile == "" {
			p.add("basicAuth", "username and passwordFile must both be set")
		}
		if b.TokenFile != "" {
			p.add("tokenFile", "tokenFile and basicAuth are mutually exclusive")
		}
	}
}

// shorten cuts a hostile value for an error message.
func shorten(s string) string {
	const keep = 64
	if len(s) > keep {
		return strings.ToValidUTF8(s[:keep], "") + "..."
	}
	return s
}

// Names returns the backend names of f, in file order.
func (f *BackendsFile) Names() []string {
	if f == nil {
		return nil
	}
	out := make([]string, len(f.Backends))
	for i, b := range f.Backends {
		out[i] = b.Name
	}
	return out
}

// CheckBackends checks the backend fields of cfg's rules against the backends that
// exist (known; DefaultBackend and empty always do). Each unknown name is a
// FieldError naming the rule and the field. Only the name grammar is checked when
// known is nil, so a rule file can be checked without its backends file.
func CheckBackends(cfg *File, known []string) []FieldError {
	var errs []FieldError
	check := func(rule, name string) {
		switch {
		case name == "" || name == DefaultBackend:
		case !backendNameRE.MatchString(name):
			errs = append(errs, FieldError{Rule: rule, Field: "backend", Message: fmt.Sprintf("%q is not a backend name (a DNS label)", shorten(name))})
		case known != nil && !slices.Contains(known, name):
			errs = append(errs, FieldError{Rule: rule, Field: "backend", Message: unknownBackend(name, known)})
		}
	}
	for i, r := range cfg.Rules {
		check(r.Describe("rules", i), r.Backend)
	}
	for i, r := range cfg.ExternalRules {
		check(r.Describe("externalRules", i), r.Backend)
	}
	if cfg.ResourceRules != nil {
		check("resourceRules", cfg.ResourceRules.Backend)
	}
	return errs
}

func unknownBackend(name string, known []string) string {
	if len(known) == 0 {
		return fmt.Sprintf("unknown backend %q: no --prometheus-backends-file is given, only %q exists", name, DefaultBackend)
	}
	return fmt.Sprintf("unknown backend %q (known: %s, %s)", name, DefaultBackend, strings.Join(known, ", "))
}
