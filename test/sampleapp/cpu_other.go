//go:build !linux

package sampleapp

import "time"

// threadCPU reports that there is no thread cpu clock on this platform.
func threadCPU() (time.Duration, bool) { return 0, false }
