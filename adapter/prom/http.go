package prom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/model"
)

// MaxGETURLLength is the longest request URL sent as GET; longer requests use POST
// with a form body so that proxies and Prometheus never answer 414.
const MaxGETURLLength = 8 * 1024

// Verb selects how queries are sent.
type Verb string

const (
	// VerbGET sends GET unless the URL would exceed MaxGETURLLength, then POST.
	VerbGET Verb = "GET"
	// VerbPOST always sends POST.
	VerbPOST Verb = "POST"
)

// HTTPClient talks to one Prometheus over its HTTP API.
type HTTPClient struct {
	api         api.Client
	http        *http.Client
	verb        Verb
	maxResponse int64
	maxSeries   int64
}

var _ Client = (*HTTPClient)(nil)

// NewHTTPClient returns a client for the Prometheus at address (query parameters of
// address, such as Thanos' dedup, are kept on every request) using httpClient for
// transport (authentication, TLS). A nil httpClient means http.DefaultClient. Bodies
// read are capped (DefaultMaxResponseBytes, DefaultMaxSeriesBytes unless opts say
// otherwise); a response over a cap fails with a *LimitError.
func NewHTTPClient(address string, httpClient *http.Client, verb Verb, opts ...HTTPOption) (*HTTPClient, error) {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	switch verb {
	case "", VerbGET:
		verb = VerbGET
	case VerbPOST:
	default:
		return nil, fmt.Errorf("unknown prometheus verb %q (want GET or POST)", verb)
	}
	hc := &HTTPClient{http: httpClient, verb: verb, maxResponse: DefaultMaxResponseBytes, maxSeries: DefaultMaxSeriesBytes}
	for _, o := range opts {
		o(hc)
	}
	limited := *httpClient
	limited.Transport = limitTransport{next: transportOf(httpClient), max: hc.maxResponse}
	c, err := api.NewClient(api.Config{Address: address, Client: &limited})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	hc.api = c
	return hc, nil
}

func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// newRequest builds a request for endpoint ep carrying form: GET with the form in the
// URL (merged with the address' own query parameters) when it fits, POST otherwise.
func (c *HTTPClient) newRequest(ctx context.Context, ep string, form url.Values) (*http.Request, error) {
	if deadline, ok := ctx.Deadline(); ok {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, context.DeadlineExceeded
		}
		// Float seconds: Prometheus parses them everywhere, while a fractional
		// duration with a unit ("9.5s") is rejected by older versions.
		form.Set("timeout", strconv.FormatFloat(remaining.Seconds(), 'f', 3, 64))
	}
	u := c.api.URL(ep, nil)
	encoded := form.Encode()
	if c.verb == VerbGET {
		get := *u
		get.RawQuery = joinQuery(u.RawQuery, encoded)
		if len(get.String()) <= MaxGETURLLength {
			return http.NewRequestWithContext(ctx, http.MethodGet, get.String(), nil)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(encoded))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}

func joinQuery(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "&" + b
}

// envelope is the common shape of Prometheus API responses.
type envelope struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

// do sends req and decodes the envelope's data into out.
func (c *HTTPClient) do(ctx context.Context, req *http.Request, out any) error {
	resp, body, err := c.api.Do(ctx, req)
	if err != nil {
		return fmt.Errorf("prometheus request: %w", err)
	}
	return decodeEnvelope(resp.StatusCode, body, out)
}

// decodeEnvelope decodes a response's data into out, or returns its error. A
// success is read in one pass (the data straight into out); anything else is
// read again field by field, for the error it carries.
func decodeEnvelope(status int, body []byte, out any) error {
	env := struct {
		Status string `json:"status"`
		Data   any    `json:"data"`
	}{Data: out}
	if err := json.Unmarshal(body, &env); err == nil && env.Status == "success" {
		return nil
	}
	return decodeEnvelopeFields(status, body, out)
}

func decodeEnvelopeFields(status int, body []byte, out any) error {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		if status/100 != 2 {
			return &APIError{StatusCode: status, Type: "http", Message: http.StatusText(status)}
		}
		return fmt.Errorf("decode prometheus response: %w", err)
	}
	if env.Status != "success" {
		return &APIError{StatusCode: status, Type: env.ErrorType, Message: env.Error}
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("decode prometheus data: %w", err)
	}
	return nil
}

// queryResult is the data of a query answer.
type queryResult struct {
	Type   model.ValueType `json:"resultType"`
	Result json.RawMessage `json:"result"`
}

// query sends a query to endpoint ep and returns the answer's data.
func (c *HTTPClient) query(ctx context.Context, ep string, form url.Values) (queryResult, error) {
	var data queryResult
	req, err := c.newRequest(ctx, ep, form)
	if err != nil {
		return data, err
	}
	err = c.do(ctx, req, &data)
	return data, err
}

// Query implements Client.
func (c *HTTPClient) Query(ctx context.Context, query string) (model.Vector, error) {
	data, err := c.query(ctx, "/api/v1/query", url.Values{"query": {query}})
	if err != nil {
		return nil, err
	}
	switch data.Type {
	case model.ValVector:
		v, err := decodeVector(data.Result)
		if err != nil {
			return nil, fmt.Errorf("decode vector: %w", err)
		}
		return v, nil
	case model.ValScalar:
		var s model.Scalar
		if err := json.Unmarshal(data.Result, &s); err != nil {
			return nil, fmt.Errorf("decode scalar: %w", err)
		}
		return model.Vector{{Metric: model.Metric{}, Value: s.Value, Timestamp: s.Timestamp}}, nil
	default:
		return nil, fmt.Errorf("query returned a %s, want a vector", data.Type)
	}
}

// LabelValues implements Client.
func (c *HTTPClient) LabelValues(ctx context.Context, label string, matches []string, start time.Time) ([]string, error) {
	if !model.LegacyValidation.IsValidLabelName(label) {
		return nil, fmt.Errorf("invalid label name %q", label)
	}
	form := url.Values{"match[]": matches}
	if !start.IsZero() {
		form.Set("start", formatTime(start))
	}
	req, err := c.newRequest(ctx, "/api/v1/label/"+label+"/values", form)
	if err != nil {
		return nil, err
	}
	var values []string
	if err := c.do(ctx, req, &values); err != nil {
		return nil, err
	}
	return values, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1e3, 'f', 3, 64)
}

// Series implements Client. The response body is decoded as a stream, one series at
// a time, so a million series cost no more memory than one.
func (c *HTTPClient) Series(ctx context.Context, matches []string, start time.Time, fn func(string, []string) error) error {
	form := url.Values{"match[]": matches}
	if !start.IsZero() {
		form.Set("start", formatTime(start))
	}
	req, err := c.newRequest(ctx, "/api/v1/series", form)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("prometheus request: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64*1024))
		return decodeEnvelope(resp.StatusCode, body, &struct{}{})
	}
	body := newRefilled(resp.Body, c.maxSeries)
	return decodeSeriesStream(body, func(name string, labels []string) error {
		body.refill()
		return fn(name, labels)
	})
}

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
