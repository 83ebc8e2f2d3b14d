package main

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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
	_ = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got = append(got, reap()...)
		return len(got) >= len(want), nil
	})
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("reaped %v, want %v", got, want)
	}
	if more := reap(); len(more) != 0 {
		t.Errorf("reaped %v with no child left", more)
	}
}
