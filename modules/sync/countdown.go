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

// add adds delta to the count and returns the new count, waking the
// waiters if it is zero.
func (c *countdown) add(delta int64) int64 {
	v := c.count.Add(delta)
	if v == 0 {
		c.reachedZero()
	}
	return v
}

// reachedZero wakes the waiters after a change brought the count to zero.
func (c *countdown) reachedZero() {
	// Dekker pairing with register: it raises nwait and then loads count;
	// we stored count and now load nwait. One of us sees the other.
	if c.nwait.Load() == 0 {
		return
	}
	c.mu.Lock()
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
