package main

import (
	"slices"
	"testing"
	"time"
)

// series builds samples whose web and web-ebbflow replicas follow web and
// worker replicas follow worker (same length).
func series(web, worker []int32) []sample {
	var out []sample
	for i := range web {
		out = append(out, sample{W: map[string]workloadState{
			"web":      {Replicas: web[i], Desired: web[i]},
			webEbbflow: {Replicas: web[i], Desired: web[i]},
			"worker":   {Replicas: worker[i], Desired: worker[i]},
			"api":      {Replicas: 1, Desired: 1},
		}})
	}
	return out
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name        string
		web, worker []int32
		wantErr     bool
		wantSettled bool
	}{
		{"both up and down", []int32{1, 3, 8, 4, 1}, []int32{1, 2, 6, 2, 1}, false, true},
		{"never scaled", []int32{1, 1, 1}, []int32{1, 1, 1}, true, false},
		{"web stuck high", []int32{1, 3, 8, 8, 8}, []int32{1, 2, 6, 2, 1}, true, false},
		{"worker down then up again", []int32{1, 3, 1}, []int32{1, 4, 1, 3}[:3], false, true},
		{"worker ends above start", []int32{1, 3, 1, 1}, []int32{1, 4, 1, 2}, true, false},
		{"no samples", nil, nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := series(tt.web, tt.worker)
			outs, err := verdict(s, workloads, required)
			if (err != nil) != tt.wantErr {
				t.Errorf("verdict() error = %v, want error %v (outcomes %v)", err, tt.wantErr, outs)
			}
			if got := settled(s, required); got != tt.wantSettled {
				t.Errorf("settled() = %v, want %v", got, tt.wantSettled)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	o := judge(series([]int32{2, 5, 3, 2}, []int32{1, 1, 1, 1}), "web")
	want := outcome{Name: "web", Start: 2, Max: 5, Final: 2, Up: true, Down: true}
	if o != want {
		t.Errorf("judge() = %+v, want %+v", o, want)
	}
}

func TestVerdictWebEbbflowStuck(t *testing.T) {
	s := series([]int32{1, 3, 8, 4, 1}, []int32{1, 2, 6, 2, 1})
	for i, r := range []int32{1, 3, 8, 8, 8} {
		s[i].W[webEbbflow] = workloadState{Replicas: r, Desired: r}
	}
	if _, err := verdict(s, workloads, required); err == nil {
		t.Error("verdict() passed with web-ebbflow stuck at its maximum")
	}
	if settled(s, required) {
		t.Error("settled() with web-ebbflow stuck at its maximum")
	}
}

func TestSequence(t *testing.T) {
	s := series([]int32{0, 1, 1, 3, 3, 5, 2, 2, 1}, make([]int32, 9))
	got := sequence(s, func(s sample) int32 { return s.W["web"].Replicas })
	if want := []int32{1, 3, 5, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("sequence() = %v, want %v", got, want)
	}
}

// workerSeries is samples of the worker's spec.replicas, one second apart;
// -1 is a sample where its Deployment was not read.
func workerSeries(specs ...int32) []sample {
	var out []sample
	for i, r := range specs {
		ws := workloadState{Seen: r >= 0, Spec: max(r, 0)}
		out = append(out, sample{T: time.Duration(i) * time.Second, W: map[string]workloadState{worker: ws}})
	}
	return out
}

func TestJudgeZeroWake(t *testing.T) {
	tests := []struct {
		name  string
		specs []int32
		want  zeroWake
	}{
		{"zero, wake, zero", []int32{1, 1, 0, 0, 2, 3, 1, 0}, zeroWake{Name: worker, ReachedZero: true, ZeroAt: 2 * time.Second,
			Woke: true, WokeAt: 4 * time.Second, PeakAfterWake: 3, BackToZero: true}},
		{"never zero", []int32{1, 2, 1}, zeroWake{Name: worker}},
		{"zero, never woke", []int32{1, 0, 0}, zeroWake{Name: worker, ReachedZero: true, ZeroAt: time.Second}},
		{"woke, stays up", []int32{0, 1, 1}, zeroWake{Name: worker, ReachedZero: true, Woke: true, WokeAt: time.Second, PeakAfterWake: 1}},
		{"unread samples are not zero", []int32{-1, -1, 1, -1}, zeroWake{Name: worker}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judgeZeroWake(workerSeries(tt.specs...), worker)
			if got != tt.want {
				t.Errorf("judgeZeroWake(%v) = %+v, want %+v", tt.specs, got, tt.want)
			}
			if wantOK := tt.want.ReachedZero && tt.want.Woke; (got.err() == nil) != wantOK {
				t.Errorf("err() = %v, want nil: %t", got.err(), wantOK)
			}
		})
	}
}
