package runtime

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"
)

// A failed task whose handle was dropped is reported once the collector
// frees the handle, also when the watchdog sampled the task while it ran
// and then went to sleep with every worker parked.
func TestDroppedFailureNotRetainedByWatchdog(t *testing.T) {
	var fl failureLog
	rt := newRuntime(t, Config{Workers: 1, StallThreshold: 2 * time.Millisecond, OnTaskFailure: fl.hook})
	ended := make(chan struct{})
	SpawnOn(rt, func(ctx context.Context) (int, error) {
		defer close(ended)
		// Run, without yielding, across several of the watchdog's
		// ticks (every millisecond), so that it samples the task.
		for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
		}
		return 0, errBoom
	})
	<-ended
	deadline := time.Now().Add(3 * time.Second)
	for len(fl.all()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a failed task whose handle was dropped was not reported within 3s (watchdog asleep: %v)", rt.watchdog.Asleep())
		}
		goruntime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := fl.all(); !errors.Is(got[0].Err, errBoom) {
		t.Fatalf("reported %+v, want boom", got)
	}
}
