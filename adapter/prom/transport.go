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
	// clients do. Exclusive with AuthConfig and the options above.
	InCluster bool
	// AuthConfig is a kubeconfig file whose cluster and user are used to reach
	// Prometheus. Exclusive with InCluster and the options above.
	AuthConfig   string
	DisableHTTP2 bool
}

// Validate reports every inconsistency among the options.
func (o TransportOptions) Validate() []error {
	var errs []error
	if o.InCluster && o.AuthConfig != "" {
		errs = append(errs, errors.New("--prometheus-auth-incluster and --prometheus-auth-config are mutually exclusive"))
	}
	kube := o.InCluster || o.AuthConfig != ""
	if kube && (o.CAFile != "" || o.ClientCertFile != "" || o.TokenFile != "" || o.BasicAuthUsername != "") {
		errs = append(errs, errors.New("--prometheus-auth-incluster/--prometheus-auth-config cannot be combined with the prometheus TLS, token or basic-auth flags"))
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
	if o.InCluster || o.AuthConfig != "" {
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
