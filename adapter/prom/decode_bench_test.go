package prom

import (
	"fmt"
	"strings"
	"testing"
)

// answer1000 is a query answer of 1,000 samples, one per pod, as Prometheus
// writes it for a `*` Pods request (88 KB).
func answer1000() []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"pod":"web-7c9d8f6b5d-%05x"},"value":[1764290000.123,"%d.016666666666666666"]}`, i*7919%(1<<20), i)
	}
	b.WriteString(`]}}`)
	return []byte(b.String())
}

// BenchmarkDecodeVector is the adapter's decoding of a 1,000-sample answer:
// the envelope, the data, the vector.
func BenchmarkDecodeVector(b *testing.B) {
	body := answer1000()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var data queryResult
		if err := decodeEnvelope(200, body, &data); err != nil {
			b.Fatal(err)
		}
		v, err := decodeVector(data.Result)
		if err != nil {
			b.Fatal(err)
		}
		if len(v) != 1000 {
			b.Fatal(len(v))
		}
	}
}
