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
//
// With waiters queued the flag goes up under the lock that guards the
// list, with the list taken in the same hold: the waiters woken are those
// queued before the Set, and a Reset and a Wait that come after it (the
// Wait queues only once the lock is free) wait for the next Set. Raising
// the flag before taking the lock let such a late Wait be woken by a Set
// that had happened before it.
func (e *Event) Set() {
	for {
		old := e.state.Load()
		if old&eventSet != 0 {
			return
		}
		if old&eventWaiters == 0 {
			// Nobody queued: a Wait that queues from now on announces
			// itself first (Or of eventWaiters), which fails this CAS.
			if e.state.CompareAndSwap(old, old|eventSet) {
				return
			}
			continue
		}
		e.mu.Lock()
		if e.state.Or(eventSet)&eventSet != 0 {
			e.mu.Unlock()
			return
		}
		if testHookEventSet != nil {
			testHookEventSet()
		}
		ws := e.waiters.takeAll()
		e.state.And(^uint32(eventWaiters))
		e.mu.Unlock()
		wakeAll(ws)
		return
	}
}

// testHookEventSet, nil outside tests, runs in Set right after the event
// went up with waiters queued, before they are woken.
var testHookEventSet func()

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
