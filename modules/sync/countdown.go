package sync

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/faio-go/faio/modules/runtime"
)

// countdown is the counter shared by WaitGroup and Latch: Wait returns once
// the count is zero. Changing the count touches one atomic word; the lock
// guarding the wait list is taken only by a Wait that has to wait, and by
// the change that brings the count to zero while someone waits.
type countdown struct {
	count   atomic.Int64
	nwait   atomic.Int32 // waiters queued or about to be
	mu      sync.Mutex
	waiters waitList
}

// reachedZero wakes the waiters after a change brought the count to zero,
// if the count is still zero.
//
// The change and this call are not one atomic step: the changer may be
// paused in between. A WaitGroup may meanwhile be reused (its Wait returns
// on seeing the count at zero, the next round Adds and Waits), and a wake
// for the old zero would release the new round's waiter while the count is
// not zero. So the count is looked at again under mu, which register also
// holds while it queues: a waiter queued now is woken only if the count is
// zero now.
//
// No wake-up is lost. register raises nwait and then loads count, both under
// mu; a change to zero stores count and then loads nwait (all sequentially
// consistent). A waiter that queued loaded a count other than zero, so the
// store that next brings the count to zero comes after its nwait increment,
// and that change's reachedZero sees nwait > 0 and takes mu (the waiter is
// in the list by then, since it queued under mu before unlocking). If that
// reachedZero finds the count no longer zero, a positive Add has raised it
// since, and the change that brings it back to zero runs reachedZero in
// turn: the waiter stays queued (and nwait raised) until some reachedZero
// finds the count zero under mu, or its own Wait is cancelled. For a Latch
// the count never rises again, so the re-check always passes. A
// reachedZero that finds nwait zero returns: any waiter that registers
// after that load sees the count's zero (or a later value) and, if it is
// zero, declines to wait.
func (c *countdown) reachedZero() {
	// Dekker pairing with register: it raises nwait and then loads count;
	// we stored count and now load nwait. One of us sees the other.
	if c.nwait.Load() == 0 {
		return
	}
	c.mu.Lock()
	if c.count.Load() != 0 {
		// A stale zero: the count was raised again before we got
		// here. The change that next brings it to zero wakes the
		// waiters.
		c.mu.Unlock()
		return
	}
	ws := c.waiters.takeAll()
	c.nwait.Store(0)
	c.mu.Unlock()
	wakeAll(ws)
}

func (c *countdown) wait(ctx context.Context) error {
	if err := runtime.Consume(ctx); err != nil {
		return err
	}
	if c.count.Load() == 0 {
		return nil
	}
	w := new(waiter)
	err := runtime.Suspend(ctx, func(wk runtime.Waker) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.nwait.Add(1)
		if c.count.Load() == 0 {
			// Nothing consumed: safe to decline even if a
			// cancellation ends the wait meanwhile.
			c.nwait.Add(-1)
			return false
		}
		w.waker = wk
		w.state = waiterQueued
		c.waiters.pushBack(w)
		return true
	})
	if err != nil {
		c.mu.Lock()
		if w.state == waiterQueued {
			c.waiters.remove(w)
			c.nwait.Add(-1)
		}
		c.mu.Unlock()
	}
	return err
}
