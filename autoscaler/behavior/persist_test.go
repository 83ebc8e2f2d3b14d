package behavior

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func TestEventsRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 600}}},
	}
	ev := ScaleEvents{
		Up:   []ScaleEvent{{Change: 4, Timestamp: now.Add(-20 * time.Second)}, {Change: 2, Timestamp: now.Add(-5 * time.Second)}},
		Down: []ScaleEvent{{Change: 1, Timestamp: now.Add(-700 * time.Second)}, {Change: 1, Timestamp: now.Add(-10 * time.Second)}, {Change: 3, Timestamp: now.Add(-time.Second), Outdated: true}},
	}
	s := EncodeEvents(b, ev, now)
	// Up: the default scale-up policies look back 15s; down: 600s.
	if want := `{"up":[[2,1699999995000]],"down":[[1,1699999990000]]}`; s != want {
		t.Fatalf("encoded %s, want %s", s, want)
	}
	got, err := DecodeEvents(s, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Up) != 1 || got.Up[0].Change != 2 || !got.Up[0].Timestamp.Equal(now.Add(-5*time.Second)) ||
		len(got.Down) != 1 || got.Down[0].Change != 1 {
		t.Fatalf("decoded %+v", got)
	}
	// What the policies read is what they read before the round trip.
	if changeInPeriod(600, got.Down, now) != 1 || changeInPeriod(15, got.Up, now) != 2 {
		t.Fatal("restored events count differently")
	}
	if EncodeEvents(nil, ev, now) != "" {
		t.Fatal("a nil behavior stores nothing")
	}
}

func TestEncodeKeepsNewest(t *testing.T) {
	now := time.Unix(1000, 0)
	var up []ScaleEvent
	for i := range MaxStoredEvents + 5 {
		up = append(up, ScaleEvent{Change: int32(i + 1), Timestamp: now.Add(-time.Duration(MaxStoredEvents+5-i) * time.Millisecond)})
	}
	got, err := DecodeEvents(EncodeEvents(&autoscalingv2.HorizontalPodAutoscalerBehavior{}, ScaleEvents{Up: up}, now), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Up) != MaxStoredEvents || got.Up[len(got.Up)-1].Change != MaxStoredEvents+5 {
		t.Fatalf("kept %d events, last %+v", len(got.Up), got.Up[len(got.Up)-1])
	}
}

func TestDecodeRefusesHostileInput(t *testing.T) {
	now := time.Unix(1000, 0)
	many := "[" + strings.Repeat("[1,1],", MaxStoredEvents) + "[1,1]]"
	for name, in := range map[string]string{
		"not JSON":        "{",
		"zero change":     `{"up":[[0,1]]}`,
		"negative change": `{"down":[[-3,1]]}`,
		"huge change":     `{"up":[[4294967296,1]]}`,
		"too many":        `{"up":` + many + `}`,
		"too long":        `{"up":[]` + strings.Repeat(" ", MaxStoredSize) + `}`,
	} {
		if _, err := DecodeEvents(in, now); err == nil {
			t.Errorf("%s: accepted %.60q", name, in)
		}
	}
	got, err := DecodeEvents(`{"up":[[3,99999999999999]]}`, now)
	if err != nil || !got.Up[0].Timestamp.Equal(now) {
		t.Fatalf("a future event: %+v, %v; want it read as now", got, err)
	}
}

func FuzzDecodeEvents(f *testing.F) {
	f.Add(`{"up":[[2,1699999995000]],"down":[[1,1699999990000]]}`)
	f.Add(`{"up":[[1,-1]]}`)
	now := time.Unix(1000, 0)
	f.Fuzz(func(t *testing.T, s string) {
		ev, err := DecodeEvents(s, now)
		if err != nil {
			return
		}
		for _, e := range append(ev.Up, ev.Down...) {
			if e.Change <= 0 || e.Timestamp.After(now) {
				t.Fatalf("decoded %+v from %q", e, s)
			}
		}
		if len(ev.Up) > MaxStoredEvents || len(ev.Down) > MaxStoredEvents {
			t.Fatal("unbounded")
		}
	})
}
