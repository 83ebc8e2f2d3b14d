package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args     []string
		wantErr  string
		fake     bool
		duration time.Duration
		peak     float64
	}{
		{args: nil, duration: realDuration, peak: realPeak},
		{args: []string{"--fake-nodes"}, fake: true, duration: fakeDuration, peak: fakePeak},
		{args: []string{"--duration", "2m"}, duration: 2 * time.Minute, peak: realPeak},
		{args: []string{"--fake-nodes", "--peak", "200"}, fake: true, duration: fakeDuration, peak: 200},
		{args: []string{"--peak", "200"}, wantErr: "--peak 200: want 8..40"},
		{args: []string{"--fake-nodes", "--peak", "10"}, wantErr: "--peak 10: want 20..1000"},
		{args: []string{"--duration", "30s"}, wantErr: "--duration 30s"},
		{args: []string{"--settle", "11m"}, wantErr: "--settle 11m0s"},
		{args: []string{"--print-every", "100ms"}, wantErr: "--print-every"},
		{args: []string{"extra"}, wantErr: "unexpected arguments"},
		{args: []string{"--no-such-flag"}, wantErr: "flags:"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseFlags(%q) error %v, want one containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.fakeNodes != tt.fake || o.duration != tt.duration || o.peak != tt.peak {
				t.Errorf("parseFlags(%q) = fake %t, duration %v, peak %v; want %t, %v, %v", tt.args, o.fakeNodes, o.duration, o.peak, tt.fake, tt.duration, tt.peak)
			}
		})
	}
}
