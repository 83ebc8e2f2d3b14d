package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// MaxResponseBytes bounds one answer of an upstream; a longer one is refused
// as garbage.
const MaxResponseBytes = 32 << 20

// maxInFlight bounds the requests in flight to one upstream; a request
// waits for a slot within its timeout.
const maxInFlight = 64

// errTooLarge is the error reading an answer longer than MaxResponseBytes.
var errTooLarge = fmt.Errorf("answer longer than %d bytes", MaxResponseBytes)

// restConfig is the client configuration of u: Ebbflow's own identity (the
// credentials of identity: bearer token or token file, client certificate,
// exec or auth provider) sent to u's URL, verified with u's CA; no rate
// limiter (in-flight requests are bounded instead), the request timeout u
// says, answers bounded to MaxResponseBytes.
func restConfig(identity *rest.Config, u Config) (*rest.Config, error) {
	if identity == nil {
		return nil, errors.New("upstream: no identity to forward with")
	}
	cfg := rest.CopyConfig(identity)
	cfg.Host, cfg.APIPath = u.BaseURL(), ""
	cfg.Impersonate = rest.ImpersonationConfig{}
	tls := &cfg.TLSClientConfig
	tls.CAFile, tls.CAData, tls.ServerName = u.CAFile, []byte(u.CABundle), ""
	tls.Insecure = u.InsecureSkipTLSVerify
	if tls.Insecure {
		tls.CAFile, tls.CAData = "", nil
	}
	cfg.Timeout = u.RequestTimeout()
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	cfg.UserAgent = "ebbflow-adapter/upstream"
	cfg.AcceptContentTypes, cfg.ContentType = "application/json", "application/json"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	wrap := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return limitTransport{next: rt, max: MaxResponseBytes}
	}
	return cfg, nil
}

// client sends bounded GET requests to one upstream.
type client struct {
	name    string
	rest    rest.Interface
	timeout time.Duration
	slots   chan struct{}
}

func newClient(identity *rest.Config, u Config) (*client, error) {
	cfg, err := restConfig(identity, u)
	if err != nil {
		return nil, err
	}
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: client: %w", u.Name, err)
	}
	return &client{name: u.Name, rest: rc, timeout: u.RequestTimeout(), slots: make(chan struct{}, maxInFlight)}, nil
}

// get returns the body of a GET of path with params, within the upstream's
// timeout (a slot's wait included). Errors are client-go's: a status error
// for an answer that is not 2xx.
func (c *client) get(ctx context.Context, path string, params map[string]string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for one of %d request slots: %w", maxInFlight, ctx.Err())
	}
	req := c.rest.Get().AbsPath(path).MaxRetries(0)
	for k, v := range params {
		if v != "" {
			req = req.Param(k, v)
		}
	}
	return req.Do(ctx).Raw()
}

// limitTransport bounds the body of every answer.
type limitTransport struct {
	next http.RoundTripper
	max  int64
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > t.max {
		_ = resp.Body.Close()
		return nil, errTooLarge
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max}
	return resp, nil
}

// WrappedRoundTripper lets client-go reach the transport it wraps.
func (t limitTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// limitedBody fails the read that goes past left bytes.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, errTooLarge
	}
	return n, err
}
