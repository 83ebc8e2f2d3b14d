package main

import (
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestReapCollectsExitedChildren(t *testing.T) {
	var want []int
	for range 3 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		want = append(want, cmd.Process.Pid)
	}
	var got []int
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		got = append(got, reap()...)
		time.Sleep(10 * time.Millisecond)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("reaped %v, want %v", got, want)
	}
	if more := reap(); len(more) != 0 {
		t.Errorf("reaped %v with no child left", more)
	}
}
