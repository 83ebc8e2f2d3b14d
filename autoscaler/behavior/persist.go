package behavior

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Bounds of a stored scale-event history: it is read from an annotation any
// editor of the object can change.
const (
	// MaxStoredEvents is the most events kept per direction.
	MaxStoredEvents = 32
	// MaxStoredSize is the longest encoded history accepted.
	MaxStoredSize = 4096
)

// storedEvents is the annotation's JSON: per direction, [change, unix
// milliseconds] pairs, oldest first.
type storedEvents struct {
	Up   [][2]int64 `json:"up,omitempty"`
	Down [][2]int64 `json:"down,omitempty"`
}

// EncodeEvents returns the scale events that still count for b's policies
// at now (newer than the longest policy period of their direction, at most
// MaxStoredEvents each, the newest kept) as compact JSON; "" when none do or
// b is nil (no policy reads the history).
func EncodeEvents(b *autoscalingv2.HorizontalPodAutoscalerBehavior, events ScaleEvents, now time.Time) string {
	if b == nil {
		return ""
	}
	b = Default(b, 0)
	s := storedEvents{
		Up:   keep(events.Up, longestPeriod(b.ScaleUp), now),
		Down: keep(events.Down, longestPeriod(b.ScaleDown), now),
	}
	if len(s.Up) == 0 && len(s.Down) == 0 {
		return ""
	}
	out, err := json.Marshal(s)
	if err != nil { // cannot happen for integer pairs
		return ""
	}
	return string(out)
}

func keep(events []ScaleEvent, longest int32, now time.Time) [][2]int64 {
	cutoff := now.Add(-time.Second * time.Duration(longest))
	var out [][2]int64
	for _, e := range events {
		if !e.Outdated && e.Timestamp.After(cutoff) {
			out = append(out, [2]int64{int64(e.Change), e.Timestamp.UnixMilli()})
		}
	}
	if len(out) > MaxStoredEvents {
		out = out[len(out)-MaxStoredEvents:]
	}
	return out
}

// DecodeEvents parses a history written by EncodeEvents. It refuses
// anything longer than MaxStoredSize, more than MaxStoredEvents per
// direction, or changes that are not positive; timestamps after now are read
// as now (a hand-written future event would otherwise hold back scaling for
// longer than a policy period).
func DecodeEvents(value string, now time.Time) (ScaleEvents, error) {
	var out ScaleEvents
	if value == "" {
		return out, nil
	}
	if len(value) > MaxStoredSize {
		return out, fmt.Errorf("longer than %d bytes", MaxStoredSize)
	}
	var s storedEvents
	if err := json.Unmarshal([]byte(value), &s); err != nil {
		return out, fmt.Errorf("invalid JSON: %w", err)
	}
	var err error
	if out.Up, err = fromStored(s.Up, now); err != nil {
		return ScaleEvents{}, fmt.Errorf("up: %w", err)
	}
	if out.Down, err = fromStored(s.Down, now); err != nil {
		return ScaleEvents{}, fmt.Errorf("down: %w", err)
	}
	return out, nil
}

func fromStored(pairs [][2]int64, now time.Time) ([]ScaleEvent, error) {
	if len(pairs) > MaxStoredEvents {
		return nil, fmt.Errorf("more than %d events", MaxStoredEvents)
	}
	var out []ScaleEvent
	for _, p := range pairs {
		if p[0] <= 0 || p[0] > 1<<31-1 {
			return nil, errors.New("a change must be a positive replica count")
		}
		ts := time.UnixMilli(p[1])
		if ts.After(now) {
			ts = now
		}
		out = append(out, ScaleEvent{Change: int32(p[0]), Timestamp: ts})
	}
	return out, nil
}
