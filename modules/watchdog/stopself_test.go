package watchdog

import (
	"testing"
	"time"
)

// stopOnStall stops the watchdog from its own Stalled callback, as a
// Workers that wants one report and no more would.
type stopOnStall struct {
	*fakeWorkers
	d       chan *Watchdog
	stopped chan struct{}
}

func (s *stopOnStall) Stalled(i int, running any, d time.Duration, waiting int) {
	(<-s.d).Stop()
	close(s.stopped)
}

// Stop's doc: "Stop stops the watchdog and waits for its goroutine to
// end." Called from a Workers method, which runs on that goroutine, it
// waits for itself: the watchdog hangs for ever (and every later Stop
// with it) instead of stopping or saying it cannot.
func TestStopFromStalledReturns(t *testing.T) {
	f := &stopOnStall{fakeWorkers: newFake(1), d: make(chan *Watchdog, 1), stopped: make(chan struct{})}
	f.set(0, Sample{Running: new(int), Heartbeat: 1, Waiting: 1})
	d := Start(f, MinThreshold)
	f.d <- d
	select {
	case <-f.stopped:
	case <-time.After(3 * time.Second):
		t.Fatal("Stop called from Stalled has not returned after 3s: the watchdog goroutine waits for itself")
	}
	done := make(chan struct{})
	go func() { d.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("a later Stop did not return either")
	}
}
