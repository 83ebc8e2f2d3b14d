package prom

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/prometheus/common/model"
)

// TestDecodeVectorAgreesWithEncodingJSON: the one-pass reading of plain
// samples and the fallback give what encoding/json and model.Sample give,
// and plainVector takes only the shape it is meant for.
func TestDecodeVectorAgreesWithEncodingJSON(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		plain bool // plainVector reads it
	}{
		{"empty", `[]`, true},
		{"spaces", " [ { \"metric\" : { \"pod\" : \"a\" } , \"value\" : [ 1764290000.123 , \"1.5\" ] } ] \n", true},
		{"two samples, labels", `[{"metric":{"pod":"a","namespace":"ns"},"value":[1764290000,"2"]},{"metric":{},"value":[1.5,"-3e-2"]}]`, true},
		{"value before metric", `[{"value":[1764290000.001,"7"],"metric":{"pod":"b"}}]`, true},
		{"NaN and infinities", `[{"metric":{"pod":"a"},"value":[1,"NaN"]},{"metric":{"pod":"b"},"value":[2,"+Inf"]},{"metric":{"pod":"c"},"value":[3,"-Inf"]}]`, true},
		{"escaped label value", `[{"metric":{"pod":"a\"b\\c\u00e9"},"value":[1,"1"]}]`, false},
		{"non-ASCII label value", `[{"metric":{"pod":"é"},"value":[1,"1"]}]`, false},
		{"native histogram", `[{"metric":{"pod":"a"},"histogram":[1,{"count":"1","sum":"2","buckets":[[0,"0","1","1"]]}]}]`, false},
		{"null", `null`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want model.Vector
			wantErr := json.Unmarshal([]byte(tt.in), &want)
			got, err := decodeVector([]byte(tt.in))
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("decodeVector error %v, encoding/json's %v", err, wantErr)
			}
			if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w || len(got) != len(want) {
				t.Errorf("decodeVector = %s, encoding/json = %s", g, w)
			}
			for i := range min(len(got), len(want)) {
				if got[i].Timestamp != want[i].Timestamp || fmt.Sprint(got[i].Histogram) != fmt.Sprint(want[i].Histogram) {
					t.Errorf("sample %d: %+v, encoding/json: %+v", i, got[i], want[i])
				}
			}
			if _, ok := plainVector([]byte(tt.in)); ok != tt.plain {
				t.Errorf("plainVector ok = %v, want %v", ok, tt.plain)
			}
		})
	}
}

// TestPlainVectorRefusesMalformed: malformed input is never read as a
// vector by the fast path (encoding/json then reports it).
func TestPlainVectorRefusesMalformed(t *testing.T) {
	for _, in := range []string{
		``, `[`, `[{]`, `[{"metric":{"pod":"a"}}]`, `[{"value":[1,"1"]}]`,
		`[{"metric":{"pod":"a"},"value":[1,"1"]}`, `[{"metric":{"pod":"a"},"value":[1,"1"]}] x`,
		`[{"metric":{"pod":"a","pod":"b"},"value":[1,"1"]}]`, `[{"metric":{"pod":"a"},"value":[1,"1"],"value":[2,"2"]}]`,
		`[{"metric":{"pod":"a"},"value":[,"1"]}]`, `[{"metric":{"pod":"a"},"value":[1,"x"]}]`, `[{"metric":{"pod":1},"value":[1,"1"]}]`,
		`[{"metric":{"pod":"a"},"value":[1,"1"]},]`,
	} {
		if v, ok := plainVector([]byte(in)); ok {
			t.Errorf("plainVector(%q) = %v, true; want false", in, v)
		}
		if _, err := decodeVector([]byte(in)); err == nil {
			var want model.Vector
			if json.Unmarshal([]byte(in), &want) != nil {
				t.Errorf("decodeVector(%q): no error, encoding/json has one", in)
			}
		}
	}
}

// FuzzDecodeVector: whatever encoding/json reads as a vector, decodeVector
// reads the same (input it refuses, the fast path may read too: it does not
// validate JSON that Prometheus never writes, such as "01").
func FuzzDecodeVector(f *testing.F) {
	for _, seed := range []string{
		`[]`, `[{"metric":{"pod":"a"},"value":[1764290000.123,"1.5"]}]`,
		`[{"value":[1,"NaN"],"metric":{}}]`, `[{"metric":{"pod":"a\"b"},"value":[1,"1"]}]`,
		`[{"metric":{"pod":"a"},"histogram":[1,{"count":"1","sum":"2"}]}]`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want model.Vector
		if json.Unmarshal(b, &want) != nil {
			return
		}
		got, err := decodeVector(b)
		if err != nil {
			t.Fatalf("decodeVector(%q): %v; encoding/json read it", b, err)
		}
		if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w || len(got) != len(want) {
			t.Fatalf("decodeVector(%q) = %s, encoding/json = %s", b, g, w)
		}
		for i := range got {
			if got[i].Timestamp != want[i].Timestamp {
				t.Fatalf("decodeVector(%q): sample %d at %v, encoding/json at %v", b, i, got[i].Timestamp, want[i].Timestamp)
			}
		}
	})
}
