package sync

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/faio-go/faio/modules/runtime"
)

// An Event is a flag that tasks and goroutines can wait for: Wait returns
// once the event is set. Set wakes every waiter (oldest first) and leaves
// the event set, so later Waits return at once, until Reset clears it. The
// zero value is an event that is not set; an Event must not be copied after
// first use.
//
// Set, Reset, IsSet and a Wait on a set event touch one atomic word; only a
// Wait that must wait, and a Set that finds waiters, take the internal
// lock that guards the wait list.
type Event struct {
	state   atomic.Uint32 // eventSet | eventWaiters
	mu      sync.Mutex
	waiters waitList
}

const (
	eventSet     = 1 << iota // the event is set
	eventWaiters             // the wait list may be non-empty: Set must look
)

// Set sets the event and wakes all its waiters. Setting a set event does
// nothing.
func (e *Event) Set() {
	old := e.state.Or(eventSet)
	if old&eventSet != 0 || old&eventWaiters == 0 {
		return
	}
	e.mu.Lock()
	ws := e.waiters.takeAll()
	e.state.And(^uint32(eventWaiters))
	e.mu.Unlock()
	wakeAll(ws)
}

// Reset clears the event; Waits from now on wait for the next Set.
func (e *Event) Reset() { e.state.And(^uint32(eventSet)) }

// IsSet reports whether the event is set.
func (e *Event) IsSet() bool { return e.state.Load()&eventSet != 0 }

// Wait waits until the event is set, suspending the calling task (or
// blocking the calling goroutine). It returns nil once the event is set, or
// ctx.Err() if ctx is done first (at once if ctx is already done). An event
// that is set and reset before a waiter could run still releases that
// waiter: the Set woke it.
func (e *Event) Wait(ctx context.Context) error {
	if err := runtime.Consume(ctx); err != nil {
		return err
	}
	if e.IsSet() {
		return nil
	}
	w := new(waiter)
	err := runtime.Suspend(ctx, func(wk runtime.Waker) bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		// Announce the waiter before looking at the flag, in the same
		// atomic operation: a Set either comes after it (and then sees
		// eventWaiters and takes the lock we hold) or before it (and we
		// see eventSet here).
		if e.state.Or(eventWaiters)&eventSet != 0 {
			if e.waiters.len == 0 {
				e.state.And(^uint32(eventWaiters))
			}
			// Nothing is consumed by returning: a waiter cancelled
			// meanwhile loses nothing.
			return false
		}
		w.waker = wk
		w.state = waiterQueued
		e.waiters.pushBack(w)
		return true
	})
	if err != nil {
		e.mu.Lock()
		if w.state == waiterQueued {
			e.waiters.remove(w)
			if e.waiters.len == 0 {
				e.state.And(^uint32(eventWaiters))
			}
		}
		e.mu.Unlock()
	}
	return err
}
