package forecast

import (
	"testing"
	"time"
)

// BenchmarkForecast is one forecast on 69 days of one-minute history (the
// MaxPoints cap), per method.
func BenchmarkForecast(b *testing.B) {
	h := daily(70)
	now := t0.Add(70*Daily - time.Minute)
	for _, m := range Methods {
		b.Run(string(m), func(b *testing.B) {
			for b.Loop() {
				if f := Of(h, Request{Now: now, Lead: 2 * time.Minute, Season: Daily, Method: m}); !f.OK {
					b.Fatal(f.Message)
				}
			}
		})
	}
}
