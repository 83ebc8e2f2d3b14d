package storetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"time"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// Series is one series to push: its labels (with __name__) and samples.
type Series struct {
	Labels  map[string]string
	Samples []Sample
}

// Sample is one value at one time.
type Sample struct {
	T time.Time
	V float64
}

// pushBatch bounds the samples of one remote-write request.
const pushBatch = 20000

// Push writes series into the store through its remote-write endpoint, as
// Prometheus does (Prometheus remote write 1.0: a snappy-compressed
// WriteRequest protobuf), in requests of at most pushBatch samples. It is
// how history older than the test's Prometheus gets into a store:
// Prometheus sends only what it scrapes, never backfilled blocks.
func (s *Store) Push(ctx context.Context, series []Series) error {
	var ts [][]byte
	n := 0
	flush := func() error {
		if len(ts) == 0 {
			return nil
		}
		err := s.write(ctx, ts)
		ts, n = ts[:0], 0
		return err
	}
	for _, se := range series {
		for i := 0; i < len(se.Samples); i += pushBatch {
			part := se.Samples[i:min(len(se.Samples), i+pushBatch)]
			if n+len(part) > pushBatch {
				if err := flush(); err != nil {
					return err
				}
			}
			ts = append(ts, encodeSeries(se.Labels, part))
			n += len(part)
		}
	}
	return flush()
}

// write sends one WriteRequest holding the encoded time series.
func (s *Store) write(ctx context.Context, series [][]byte) error {
	var req []byte
	for _, b := range series {
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, b)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.WriteURL(), bytes.NewReader(snappy.Encode(nil, req)))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	for k, v := range s.Headers() {
		hr.Header.Set(k, v)
	}
	resp, err := loopback.Do(hr)
	if err != nil {
		return fmt.Errorf("push to %s: %w", s.kind, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("push to %s: %s: %s", s.kind, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// encodeSeries encodes one prompb.TimeSeries: labels sorted by name (field
// 1: name 1, value 2), then samples (field 2: value 1 as double, timestamp 2
// in milliseconds).
func encodeSeries(labels map[string]string, samples []Sample) []byte {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	sort.Strings(names)
	var b []byte
	for _, k := range names {
		var l []byte
		l = protowire.AppendTag(l, 1, protowire.BytesType)
		l = protowire.AppendString(l, k)
		l = protowire.AppendTag(l, 2, protowire.BytesType)
		l = protowire.AppendString(l, labels[k])
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, l)
	}
	for _, smp := range samples {
		var m []byte
		m = protowire.AppendTag(m, 1, protowire.Fixed64Type)
		m = protowire.AppendFixed64(m, math.Float64bits(smp.V))
		m = protowire.AppendTag(m, 2, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(smp.T.UnixMilli()))
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b
}
