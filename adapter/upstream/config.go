// Package upstream lets ebbflow-adapter front other metrics API servers: the
// upstreams of --upstreams-file (config.go), one bounded client per upstream
// (client.go), the metrics each one lists, relisted periodically (listing.go),
// and the providers that route each request to Ebbflow's own rules or to the
// upstream listing the metric (route.go). Ebbflow's own rules win a name both
// serve; between upstreams, the first in the file wins.
//
// An upstream's failures stay its own: every request to it is bounded in time,
// in response size and in concurrency, and fails as a 503 naming the upstream
// only (never its URL, its message or any credential).
package upstream

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The groups an upstream may serve.
const (
	GroupCustom   = "custom.metrics.k8s.io"
	GroupExternal = "external.metrics.k8s.io"
	GroupResource = "metrics.k8s.io"
)

// Groups lists the groups an upstream may serve, and Forwarded those Ebbflow
// forwards now.
var (
	Groups    = []string{GroupCustom, GroupExternal, GroupResource}
	Forwarded = []string{GroupCustom, GroupExternal}
)

// Bounds of the file's values.
const (
	DefaultTimeout = 5 * time.Second
	MaxTimeout     = time.Minute
	DefaultPort    = 443
)

// File is --upstreams-file.
type File struct {
	Upstreams []Config `json:"upstreams"`
}

// Config is one upstream: where it is, how its serving certificate is
// verified, the groups it serves and how long a request may take.
type Config struct {
	// Name names the upstream in errors, logs and self-metrics: a DNS label,
	// unique in the file.
	Name string `json:"name"`
	// URL is the upstream's base URL (https); exactly one of URL and Service.
	URL string `json:"url,omitempty"`
	// Service is the upstream's Service, reached at
	// https://NAME.NAMESPACE.svc:PORT.
	Service *Service `json:"service,omitempty"`
	// Groups are the metrics groups forwarded to the upstream (Groups).
	Groups []string `json:"groups"`
	// CAFile and CABundle (PEM) verify the upstream's serving certificate; one
	// of them or InsecureSkipTLSVerify is required.
	CAFile                string `json:"caFile,omitempty"`
	CABundle              string `json:"caBundle,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecureSkipTLSVerify,omitempty"`
	// Timeout bounds each request to the upstream, discovery included
	// (default DefaultTimeout, at most MaxTimeout).
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// Service is a Service in the cluster.
type Service struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Port defaults to DefaultPort.
	Port int `json:"port,omitempty"`
}

// BaseURL is the upstream's URL, built from Service when URL is empty.
func (c Config) BaseURL() string {
	if c.Service == nil {
		return c.URL
	}
	port := c.Service.Port
	if port == 0 {
		port = DefaultPort
	}
	return "https://" + c.Service.Name + "." + c.Service.Namespace + ".svc:" + strconv.Itoa(port)
}

// RequestTimeout is Timeout or DefaultTimeout.
func (c Config) RequestTimeout() time.Duration {
	if c.Timeout == nil || c.Timeout.Duration == 0 {
		return DefaultTimeout
	}
	return c.Timeout.Duration
}

// Serves reports whether the upstream serves group.
func (c Config) Serves(group string) bool { return slices.Contains(c.Groups, group) }

// Load reads and validates the upstreams file at path; every problem is
// reported at once, each naming its field (upstreams[1].url).
func Load(path string) ([]Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read upstreams file: %w", err)
	}
	ups, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("upstreams file %s: %w", path, err)
	}
	return ups, nil
}

// Parse strictly decodes (an unknown key is an error naming it) and validates
// an upstreams file.
func Parse(data []byte) ([]Config, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if err := Validate(f.Upstreams); err != nil {
		return nil, err
	}
	return f.Upstreams, nil
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validate reports every problem of ups, each naming its field.
func Validate(ups []Config) error {
	var errs []error
	seen := map[string]bool{}
	for i, u := range ups {
		field := func(f string) string { return fmt.Sprintf("upstreams[%d].%s", i, f) }
		bad := func(f, format string, a ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", field(f), fmt.Sprintf(format, a...)))
		}
		switch {
		case !dnsLabel.MatchString(u.Name):
			bad("name", "must be a DNS label (lower-case letters, digits, '-', at most 63), not %q", u.Name)
		case seen[u.Name]:
			bad("name", "%q is used twice", u.Name)
		}
		seen[u.Name] = true
		validateWhere(u, bad)
		if len(u.Groups) == 0 {
			bad("groups", "at least one of %v is required", Groups)
		}
		for j, g := range u.Groups {
			switch {
			case !slices.Contains(Groups, g):
				bad(fmt.Sprintf("groups[%d]", j), "must be one of %v, not %q", Groups, g)
			case !slices.Contains(Forwarded, g):
				bad(fmt.Sprintf("groups[%d]", j), "%s is not forwarded yet (forwarded: %v)", g, Forwarded)
			case slices.Index(u.Groups, g) != j:
				bad(fmt.Sprintf("groups[%d]", j), "%q is listed twice", g)
			}
		}
		n := 0
		for _, set := range []bool{u.CAFile != "", u.CABundle != "", u.InsecureSkipTLSVerify} {
			if set {
				n++
			}
		}
		if n != 1 {
			bad("caFile", "exactly one of caFile, caBundle and insecureSkipTLSVerify is required")
		}
		if u.Timeout != nil && (u.Timeout.Duration < 0 || u.Timeout.Duration > MaxTimeout) {
			bad("timeout", "must be between 0 (default %s) and %s, not %s", DefaultTimeout, MaxTimeout, u.Timeout.Duration)
		}
	}
	return errors.Join(errs...)
}

// validateWhere checks url and service: exactly one, each well formed.
func validateWhere(u Config, bad func(f, format string, a ...any)) {
	switch {
	case (u.URL == "") == (u.Service == nil):
		bad("url", "exactly one of url and service is required")
	case u.Service != nil:
		s := u.Service
		if !dnsLabel.MatchString(s.Namespace) {
			bad("service.namespace", "must be a DNS label, not %q", s.Namespace)
		}
		if !dnsLabel.MatchString(s.Name) {
			bad("service.name", "must be a DNS label, not %q", s.Name)
		}
		if s.Port < 0 || s.Port > 65535 {
			bad("service.port", "must be between 1 and 65535 (0: %d), not %d", DefaultPort, s.Port)
		}
	default:
		p, err := url.Parse(u.URL)
		switch {
		case err != nil:
			bad("url", "does not parse: %v", err)
		case p.Scheme != "https" || p.Host == "":
			bad("url", "must be an https URL with a host")
		case p.User != nil || p.RawQuery != "" || p.Fragment != "":
			bad("url", "must not carry credentials, a query or a fragment")
		}
	}
}
