package fakeapp

import (
	"math"
	"testing"
	"time"
)

func TestProfileAt(t *testing.T) {
	shape := Shape{Base: 10, Peak: 50, Lead: 10 * time.Second, RampUp: 20 * time.Second,
		Plateau: 30 * time.Second, RampDown: 20 * time.Second, Tail: 10 * time.Second}.Profile()
	tests := []struct {
		name string
		p    Profile
		at   time.Duration
		want float64
	}{
		{"empty", nil, time.Second, 0},
		{"constant", Constant(7), time.Hour, 7},
		{"before start", shape, -time.Second, 10},
		{"lead", shape, 5 * time.Second, 10},
		{"ramp start", shape, 10 * time.Second, 10},
		{"ramp middle", shape, 20 * time.Second, 30},
		{"plateau start", shape, 30 * time.Second, 50},
		{"plateau", shape, 45 * time.Second, 50},
		{"ramp down quarter", shape, 65 * time.Second, 40},
		{"tail", shape, 85 * time.Second, 10},
		{"after end", shape, time.Hour, 10},
		{"zero-length segments skipped", Profile{{0, 1, 1}, {0, 2, 2}, {10 * time.Second, 3, 5}}, 5 * time.Second, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.At(tt.at); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("At(%v) = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
	if got, want := shape.Duration(), 90*time.Second; got != want {
		t.Errorf("Duration() = %v, want %v", got, want)
	}
}

func TestProfileValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       Profile
		wantErr bool
	}{
		{"ok", Profile{{time.Second, 0, 3}}, false},
		{"negative duration", Profile{{-time.Second, 0, 3}}, true},
		{"negative value", Profile{{time.Second, 0, -3}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestPerPodAndIncrement(t *testing.T) {
	tests := []struct {
		name      string
		total     float64
		pods      int
		dt        time.Duration
		wantPer   float64
		wantDelta float64
	}{
		{"one pod", 10, 1, time.Second, 10, 10},
		{"split", 30, 3, 200 * time.Millisecond, 10, 2},
		{"no pods", 30, 0, time.Second, 0, 0},
		{"no load", 0, 4, time.Second, 0, 0},
		{"negative load", -5, 2, time.Second, 0, 0},
		{"no time", 30, 3, 0, 10, 0},
		{"backwards time", 30, 3, -time.Second, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			per := PerPod(tt.total, tt.pods)
			if math.Abs(per-tt.wantPer) > 1e-9 {
				t.Errorf("PerPod(%v, %d) = %v, want %v", tt.total, tt.pods, per, tt.wantPer)
			}
			if got := Increment(per, tt.dt); math.Abs(got-tt.wantDelta) > 1e-9 {
				t.Errorf("Increment(%v, %v) = %v, want %v", per, tt.dt, got, tt.wantDelta)
			}
		})
	}
}

func TestQueueStep(t *testing.T) {
	tests := []struct {
		name                    string
		depth, produce, consume float64
		workers                 int
		dt                      time.Duration
		want                    float64
	}{
		{"fills without workers", 0, 20, 10, 0, 2 * time.Second, 40},
		{"balanced", 100, 20, 10, 2, time.Second, 100},
		{"drains", 100, 20, 10, 5, time.Second, 70},
		{"floors at zero", 10, 0, 10, 5, time.Second, 0},
		{"no time passes", 10, 100, 0, 0, 0, 10},
		{"negative depth repaired", -3, 0, 0, 0, 0, 0},
		{"negative produce ignored", 10, -50, 0, 1, time.Second, 10},
		{"fractional step", 0, 5, 0, 0, 200 * time.Millisecond, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := QueueStep(tt.depth, tt.produce, tt.consume, tt.workers, tt.dt)
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("QueueStep(%v, %v, %v, %d, %v) = %v, want %v",
					tt.depth, tt.produce, tt.consume, tt.workers, tt.dt, got, tt.want)
			}
		})
	}
}

func TestSetpoint(t *testing.T) {
	var zero Setpoint
	if got := zero.At(time.Hour); got != 0 {
		t.Errorf("zero Setpoint = %v, want 0", got)
	}
	s := NewSetpoint(12.5)
	if got := s.At(0); got != 12.5 {
		t.Errorf("At = %v, want 12.5", got)
	}
	s.Set(-3)
	if got := s.At(time.Minute); got != 0 {
		t.Errorf("after Set(-3) At = %v, want 0", got)
	}
}
