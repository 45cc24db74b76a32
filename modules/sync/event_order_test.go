package sync

import (
	"context"
	"testing"
	"time"
)

// A Wait that begins after a Reset that follows a Set waits for the next
// Set, even while that Set is still waking its own waiters. Set used to
// raise the flag first and take the wait list under the lock afterwards:
// a Reset and a new Wait in between were woken by a Set that had happened
// before them (found by review; the hook holds Set in that window).
func TestEventWaitAfterResetIsNotWokenByAnEarlierSet(t *testing.T) {
	var e Event
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- e.Wait(ctx) }()
	waitEventWaiters(t, &e, 1)

	late := make(chan error, 1)
	queued := make(chan struct{})
	testHookEventSet = func() {
		testHookEventSet = nil
		// The event is up: IsSet says so to anyone looking.
		if !e.IsSet() {
			t.Error("the hook ran before the event went up")
		}
		go func() {
			e.Reset()
			close(queued)
			late <- e.Wait(ctx)
		}()
		<-queued
		// Give the late Wait time to queue, where it can.
		time.Sleep(20 * time.Millisecond)
	}
	defer func() { testHookEventSet = nil }()
	e.Set()
	if err := <-first; err != nil {
		t.Fatalf("the first Wait: %v", err)
	}
	select {
	case err := <-late:
		t.Fatalf("a Wait that began after the Reset returned (%v) without a Set after it", err)
	case <-time.After(50 * time.Millisecond):
	}
	e.Set()
	select {
	case err := <-late:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next Set did not release the late Wait")
	}
}

// waitEventWaiters waits until n waiters are queued on e.
func waitEventWaiters(t *testing.T, e *Event, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		got := e.waiters.len
		e.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}
