package proc

import (
	"context"
	"io"
	"net/http"
	"time"
)

// probeTimeout bounds one Probe.
const probeTimeout = 2 * time.Second

// loopback is an HTTP client that never goes through a proxy.
var loopback = &http.Client{Transport: &http.Transport{Proxy: nil}}

// Probe reports whether GET url answers 200 within 2 s, never through a
// proxy: the readiness check of a child serving HTTP on loopback. The body
// (up to 64 KiB) is read, so the connection can be reused.
func Probe(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := loopback.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode == http.StatusOK
}
