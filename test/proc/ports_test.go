package proc

import "testing"

func TestFreePortsOutsideEphemeralRange(t *testing.T) {
	ps, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	low, haveRange := ephemeralLow()
	for _, p := range ps {
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		if haveRange && (p < portRangeLow || p >= low) {
			t.Errorf("port %d outside [%d, %d)", p, portRangeLow, low)
		}
	}
}
