package prom

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Defaults of the caps on what is read from Prometheus.
const (
	// DefaultMaxResponseBytes caps the body of a query or label-values response.
	DefaultMaxResponseBytes = 64 << 20
	// DefaultMaxSeriesBytes caps one series object of a streamed /api/v1/series
	// response (the stream as a whole is bounded by the caller's series count).
	DefaultMaxSeriesBytes = 1 << 20
)

// LimitError reports that Prometheus sent more than a cap allows; the answer was
// dropped. Test with errors.As.
type LimitError struct {
	// Limit names the cap: "response_bytes" or "series_bytes".
	Limit string
	// Max is the cap, in bytes.
	Max int64
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "series_bytes":
		return fmt.Sprintf("a series in the prometheus response is larger than %d bytes", e.Max)
	default:
		return fmt.Sprintf("prometheus response is larger than %d bytes (raise --prometheus-max-response-bytes)", e.Max)
	}
}

// limitKind returns the cap named by err, or "" when err is not a *LimitError.
func limitKind(err error) string {
	var le *LimitError
	if errors.As(err, &le) {
		return le.Limit
	}
	return ""
}

// HTTPOption changes an HTTPClient.
type HTTPOption func(*HTTPClient)

// WithMaxResponseBytes caps query and label-values response bodies; <= 0 keeps
// DefaultMaxResponseBytes.
func WithMaxResponseBytes(n int64) HTTPOption {
	return func(c *HTTPClient) {
		if n > 0 {
			c.maxResponse = n
		}
	}
}

// limitTransport caps every response body it returns at max bytes: reading past the
// cap fails with a *LimitError instead of returning a truncated body.
type limitTransport struct {
	next http.RoundTripper
	max  int64
}

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, &LimitError{Limit: "response_bytes", Max: t.max}
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.max, err: &LimitError{Limit: "response_bytes", Max: t.max}}
	return resp, nil
}

// limitedBody returns err once more than left bytes would have been read.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, b.err
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// refilled lets a streaming decoder read at most max bytes between two calls to
// refill, so one oversized element of a stream fails with a *LimitError while the
// stream as a whole may be long.
type refilled struct {
	r    io.Reader
	max  int64
	left int64
}

func newRefilled(r io.Reader, max int64) *refilled { return &refilled{r: r, max: max, left: max} }

func (f *refilled) refill() { f.left = f.max }

func (f *refilled) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, &LimitError{Limit: "series_bytes", Max: f.max}
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.r.Read(p)
	f.left -= int64(n)
	return n, err
}
