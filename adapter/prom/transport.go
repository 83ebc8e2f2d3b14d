package prom

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	commonconfig "github.com/prometheus/common/config"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TransportOptions say how to reach Prometheus: TLS, authentication, extra headers.
// File-based secrets and certificates are re-read when they change, so rotated
// credentials need no restart. No secret is ever included in an error.
type TransportOptions struct {
	CAFile                string
	ClientCertFile        string
	ClientKeyFile         string
	TokenFile             string
	BasicAuthUsername     string
	BasicAuthPasswordFile string
	// Headers are added to every request, as "Name: value" pairs.
	Headers map[string][]string
	// InCluster authenticates with the pod's service account, as the Kubernetes
	// clients do. Exclusive with AuthConfig and basic auth. As in
	// prometheus-adapter, CAFile takes precedence: with it, InCluster is ignored
	// (see Ignored), and TokenFile overrides the service account's token.
	InCluster bool
	// AuthConfig is a kubeconfig file whose cluster and user are used to reach
	// Prometheus. Same rules as InCluster.
	AuthConfig   string
	DisableHTTP2 bool
}

// kube reports whether Prometheus is reached through a Kubernetes client
// configuration: InCluster or AuthConfig, and no CAFile (which prometheus-adapter
// gives precedence).
func (o TransportOptions) kube() bool {
	return (o.InCluster || o.AuthConfig != "") && o.CAFile == ""
}

// Ignored names the options that have no effect in this combination, for a warning
// at start: prometheus-adapter accepts them and ignores them the same way.
func (o TransportOptions) Ignored() []string {
	var out []string
	if o.CAFile != "" && o.InCluster {
		out = append(out, "--prometheus-auth-incluster is ignored because --prometheus-ca-file is set (as in prometheus-adapter)")
	}
	if o.CAFile != "" && o.AuthConfig != "" {
		out = append(out, "--prometheus-auth-config is ignored because --prometheus-ca-file is set (as in prometheus-adapter)")
	}
	if o.kube() && o.ClientCertFile != "" {
		out = append(out, "--prometheus-client-tls-cert-file and --prometheus-client-tls-key-file are ignored without --prometheus-ca-file when --prometheus-auth-incluster or --prometheus-auth-config is set (as in prometheus-adapter)")
	}
	return out
}

// Validate reports every inconsistency among the options. Every combination
// prometheus-adapter accepts is accepted, with its meaning: --prometheus-ca-file
// (with or without a client certificate) takes precedence over
// --prometheus-auth-incluster/--prometheus-auth-config, and --prometheus-token-file
// adds its token to whichever client is used.
func (o TransportOptions) Validate() []error {
	var errs []error
	if o.InCluster && o.AuthConfig != "" {
		errs = append(errs, errors.New("--prometheus-auth-incluster and --prometheus-auth-config are mutually exclusive"))
	}
	if (o.InCluster || o.AuthConfig != "") && o.BasicAuthUsername != "" {
		errs = append(errs, errors.New("--prometheus-basic-auth-username cannot be combined with --prometheus-auth-incluster/--prometheus-auth-config"))
	}
	if (o.ClientCertFile == "") != (o.ClientKeyFile == "") {
		errs = append(errs, errors.New("--prometheus-client-tls-cert-file and --prometheus-client-tls-key-file must be set together"))
	}
	if o.TokenFile != "" && o.BasicAuthUsername != "" {
		errs = append(errs, errors.New("--prometheus-token-file and --prometheus-basic-auth-username are mutually exclusive"))
	}
	if (o.BasicAuthUsername == "") != (o.BasicAuthPasswordFile == "") {
		errs = append(errs, errors.New("--prometheus-basic-auth-username and --prometheus-basic-auth-password-file must be set together"))
	}
	return errs
}

// NewHTTPTransportClient builds the *http.Client described by o.
func NewHTTPTransportClient(o TransportOptions) (*http.Client, error) {
	if errs := o.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if o.kube() {
		return kubeHTTPClient(o)
	}
	cfg := commonconfig.DefaultHTTPClientConfig
	cfg.EnableHTTP2 = !o.DisableHTTP2
	cfg.TLSConfig = commonconfig.TLSConfig{CAFile: o.CAFile, CertFile: o.ClientCertFile, KeyFile: o.ClientKeyFile}
	if o.TokenFile != "" {
		cfg.Authorization = &commonconfig.Authorization{Type: "Bearer", CredentialsFile: o.TokenFile}
	}
	if o.BasicAuthUsername != "" {
		cfg.BasicAuth = &commonconfig.BasicAuth{Username: o.BasicAuthUsername, PasswordFile: o.BasicAuthPasswordFile}
	}
	if len(o.Headers) > 0 {
		cfg.HTTPHeaders = &commonconfig.Headers{Headers: map[string]commonconfig.Header{}}
		for name, values := range o.Headers {
			cfg.HTTPHeaders.Headers[name] = commonconfig.Header{Values: values}
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("prometheus http client: %w", err)
	}
	client, err := commonconfig.NewClientFromConfig(cfg, "ebbflow-adapter")
	if err != nil {
		return nil, fmt.Errorf("prometheus http client: %w", err)
	}
	return client, nil
}

func kubeHTTPClient(o TransportOptions) (*http.Client, error) {
	var (
		cfg *rest.Config
		err error
	)
	if o.InCluster {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.AuthConfig)
	}
	if err != nil {
		return nil, fmt.Errorf("prometheus auth config: %w", err)
	}
	if len(o.Headers) > 0 {
		headers := http.Header{}
		for name, values := range o.Headers {
			for _, v := range values {
				headers.Add(name, v)
			}
		}
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return headerRoundTripper{headers, rt} })
	}

	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("prometheus auth config: %w", err)
	}
	if o.TokenFile != "" {
		// Outermost, so its Authorization is set first and the kubeconfig's own
		// credentials leave it alone, as in prometheus-adapter; re-read per request.
		client.Transport = commonconfig.NewAuthorizationCredentialsRoundTripper("Bearer", commonconfig.NewFileSecret(o.TokenFile), client.Transport)
	}
	return client, nil
}

type headerRoundTripper struct {
	headers http.Header
	next    http.RoundTripper
}

func (h headerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for name, values := range h.headers {
		req.Header[name] = values
	}
	return h.next.RoundTrip(req)
}

// ParseHeaders turns repeated "Name=value" flag values into a header map.
func ParseHeaders(pairs []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("invalid --prometheus-header %q: want name=value", p)
		}
		name = http.CanonicalHeaderKey(strings.TrimSpace(name))
		out[name] = append(out[name], value)
	}
	return out, nil
}
