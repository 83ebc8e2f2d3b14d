package prom

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/pflag"
)

// ConnectionOptions are the flags that say where Prometheus is and how to
// reach it, shared by ebbflow-adapter and `ebbflow simulate` (same names,
// same meanings).
type ConnectionOptions struct {
	PrometheusURL     string
	PrometheusVerb    string
	PrometheusTimeout time.Duration
	PrometheusHeaders []string
	Transport         TransportOptions
	MaxResponseBytes  int64
}

// NewConnectionOptions returns the options with their defaults; url is the
// default of --prometheus-url.
func NewConnectionOptions(url string) ConnectionOptions {
	return ConnectionOptions{
		PrometheusURL:     url,
		PrometheusVerb:    string(VerbGET),
		PrometheusTimeout: 30 * time.Second,
		MaxResponseBytes:  DefaultMaxResponseBytes,
	}
}

// AddFlags registers the options on fs (not --disable-http2, which the
// adapter also applies to serving).
func (o *ConnectionOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PrometheusURL, "prometheus-url", o.PrometheusURL, "URL of the Prometheus HTTP API; its query parameters (e.g. Thanos dedup=true) are sent with every request.")
	fs.StringVar(&o.PrometheusVerb, "prometheus-verb", o.PrometheusVerb, "HTTP verb for queries: GET (switches to POST for queries too long for a URL) or POST.")
	fs.DurationVar(&o.PrometheusTimeout, "prometheus-timeout", o.PrometheusTimeout, "Longest time a request to Prometheus may take; the remaining time is sent as the query timeout.")
	fs.StringArrayVar(&o.PrometheusHeaders, "prometheus-header", o.PrometheusHeaders, "Extra header name=value sent to Prometheus; repeatable.")
	fs.BoolVar(&o.Transport.InCluster, "prometheus-auth-incluster", false, "Authenticate to Prometheus with the pod's service account.")
	fs.StringVar(&o.Transport.AuthConfig, "prometheus-auth-config", "", "Kubeconfig file whose cluster and user settings are used to reach Prometheus.")
	fs.StringVar(&o.Transport.CAFile, "prometheus-ca-file", "", "CA bundle to verify Prometheus' serving certificate; re-read when it changes.")
	fs.StringVar(&o.Transport.ClientCertFile, "prometheus-client-tls-cert-file", "", "Client certificate for Prometheus; re-read when it changes.")
	fs.StringVar(&o.Transport.ClientKeyFile, "prometheus-client-tls-key-file", "", "Client key for Prometheus; re-read when it changes.")
	fs.StringVar(&o.Transport.TokenFile, "prometheus-token-file", "", "File holding a bearer token for Prometheus; re-read on every request.")
	fs.StringVar(&o.Transport.BasicAuthUsername, "prometheus-basic-auth-username", "", "Basic-auth user name for Prometheus.")
	fs.StringVar(&o.Transport.BasicAuthPasswordFile, "prometheus-basic-auth-password-file", "", "File holding the basic-auth password; re-read on every request.")
	fs.Int64Var(&o.MaxResponseBytes, "prometheus-max-response-bytes", o.MaxResponseBytes, "Largest query or label-values response read from Prometheus; a larger one fails the request.")
}

// Validate reports every problem with the options.
func (o *ConnectionOptions) Validate() []error {
	var errs []error
	if u, err := url.Parse(o.PrometheusURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--prometheus-url %q must be an http or https URL", o.PrometheusURL))
	}
	if o.PrometheusVerb != string(VerbGET) && o.PrometheusVerb != string(VerbPOST) {
		errs = append(errs, fmt.Errorf("--prometheus-verb must be GET or POST, not %q", o.PrometheusVerb))
	}
	if o.PrometheusTimeout <= 0 {
		errs = append(errs, errors.New("--prometheus-timeout must be positive"))
	}
	if o.MaxResponseBytes < 1024 {
		errs = append(errs, errors.New("--prometheus-max-response-bytes must be at least 1024"))
	}
	if _, err := ParseHeaders(o.PrometheusHeaders); err != nil {
		errs = append(errs, err)
	}
	return append(errs, o.Transport.Validate()...)
}

// Client builds the Prometheus client the options describe; call Validate
// first.
func (o *ConnectionOptions) Client() (*HTTPClient, error) {
	headers, err := ParseHeaders(o.PrometheusHeaders)
	if err != nil {
		return nil, err
	}
	t := o.Transport
	t.Headers = headers
	hc, err := NewHTTPTransportClient(t)
	if err != nil {
		return nil, err
	}
	return NewHTTPClient(o.PrometheusURL, hc, Verb(o.PrometheusVerb), WithMaxResponseBytes(o.MaxResponseBytes))
}
