package sync

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/faio-go/faio/modules/runtime"
)

// A Cond is a condition variable used with a Mutex: tasks and goroutines
// wait in Wait until a predicate over the state the Mutex guards holds, and
// whoever changes that state calls Signal or Broadcast. Waiters are woken in
// the order they started waiting. The zero value is ready to use; a Cond
// must not be copied after first use.
//
// A Cond is not bound to one Mutex, but all the waiters waiting at the same
// time must use the same one.
type Cond struct {
	n       atomic.Int32 // waiters queued, readable without the lock
	mu      sync.Mutex   // guards waiters; held only briefly, never across a wait
	waiters waitList
}

// Wait waits until pred() reports true. mu must be locked by the caller
// (Wait panics if mu is not locked at all, before calling pred); pred is
// called with mu held. While pred is false Wait unlocks mu, waits
// for a Signal or Broadcast, locks mu again and re-evaluates pred. Wait
// returns with mu locked in every case: nil once pred is true, or ctx.Err()
// if ctx is done while it waits (pred is then not re-evaluated).
//
// A nil pred waits for one Signal or Broadcast. Wait does not wake up
// spuriously, but another waiter may run between the Signal and the moment
// this one holds mu again, so a predicate is the robust form.
//
// Relocking mu after a wake-up ignores ctx: it waits for mu however long it
// takes, so that Wait can keep its promise to return with mu held.
//
// A nil ctx is refused with runtime.ErrNilContext (mu still held), before
// pred is called: whether it would have waited does not matter. A nil mu
// panics, likewise before pred is called.
func (c *Cond) Wait(ctx context.Context, mu *Mutex, pred func() bool) error {
	if ctx == nil {
		return runtime.ErrNilContext
	}
	if mu == nil {
		panic("faio/sync: Cond.Wait with a nil mutex")
	}
	// Before pred, which reads what mu guards: with a true pred, an
	// unlocked mu returned nil, and the caller went on to unlock it
	// (found by a reviewer).
	mustBeLocked(mu)
	if pred == nil {
		return c.wait(ctx, mu)
	}
	for !pred() {
		if err := c.wait(ctx, mu); err != nil {
			return err
		}
	}
	return nil
}

// wait queues the caller, unlocks mu, suspends until woken and relocks mu.
// Queueing and unlocking both happen in register, after the task switched
// away: so a Signal issued by the next holder of mu always finds the
// waiter queued, and always finds it suspended.
func (c *Cond) wait(ctx context.Context, mu *Mutex) error {
	mustBeLocked(mu)
	w := new(waiter)
	err := runtime.Suspend(ctx, func(wk runtime.Waker) bool {
		c.mu.Lock()
		w.waker = wk
		w.state = waiterQueued
		c.waiters.pushBack(w)
		c.n.Add(1)
		c.mu.Unlock()
		mu.Unlock()
		return true
	})
	if err != nil {
		c.mu.Lock()
		registered := w.state != waiterFresh
		if w.state == waiterQueued {
			c.waiters.remove(w)
			c.n.Add(-1)
		}
		c.mu.Unlock()
		if !registered {
			// register never ran: mu is still held.
			return err
		}
	}
	// register unlocked mu.
	_ = mu.Lock(context.WithoutCancel(ctx))
	return err
}

// mustBeLocked panics if mu is not locked. Here, on the caller's
// goroutine, where a task's panic is its own; register's Unlock would
// panic on the worker, ending the process.
func mustBeLocked(mu *Mutex) {
	if mu.state.Load() == nil {
		panic("faio/sync: Cond.Wait with an unlocked mutex")
	}
}

// Signal wakes the longest-waiting waiter, if any. The caller may hold the
// Mutex or not; a waiter woken before the state changed under the Mutex
// re-evaluates its predicate and waits again.
func (c *Cond) Signal() {
	if c.n.Load() == 0 {
		return
	}
	c.mu.Lock()
	for w := c.waiters.popFront(); w != nil; w = c.waiters.popFront() {
		c.n.Add(-1)
		if w.waker.Wake() {
			break
		}
		// Cancelled and about to remove itself: the signal goes to the
		// next waiter instead of being lost.
	}
	c.mu.Unlock()
}

// Broadcast wakes every waiter, oldest first.
func (c *Cond) Broadcast() {
	if c.n.Load() == 0 {
		return
	}
	c.mu.Lock()
	ws := c.waiters.takeAll()
	c.n.Store(0)
	c.mu.Unlock()
	wakeAll(ws)
}
