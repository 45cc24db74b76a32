package sync

import "context"

// A WaitGroup waits for a collection of tasks or goroutines to finish, like
// sync.WaitGroup, except that a task waiting in Wait suspends instead of
// blocking its worker, and that Wait takes a context. The zero value is
// ready to use; a WaitGroup must not be copied after first use.
//
// The rules of sync.WaitGroup apply: calls to Add with a positive delta
// that start while the counter is zero must happen before the Wait they
// are meant to hold up.
type WaitGroup struct {
	c countdown
}

// Add adds delta, which may be negative, to the counter. When the counter
// becomes zero, every Wait returns. Add panics if the counter would go
// negative (as sync.WaitGroup does) or overflow; unlike sync.WaitGroup's,
// the counter is then left as it was, so a program that recovers from the
// panic still counts right.
func (wg *WaitGroup) Add(delta int) {
	c := &wg.c
	for {
		v := c.count.Load()
		n := v + int64(delta)
		switch {
		case delta < 0 && n < 0:
			panic("faio/sync: negative WaitGroup counter")
		case delta > 0 && n < v:
			panic("faio/sync: WaitGroup counter overflow")
		}
		// A compare-and-swap, not an Add: a counter taken below zero
		// even for a moment could be brought to a false zero by a
		// concurrent Add, releasing the Waits.
		if c.count.CompareAndSwap(v, n) {
			if n == 0 {
				c.reachedZero()
			}
			return
		}
	}
}

// Done decrements the counter by one.
func (wg *WaitGroup) Done() { wg.Add(-1) }

// Wait waits until the counter is zero and returns nil, or returns
// ctx.Err() if ctx is done first (at once if ctx is already done).
func (wg *WaitGroup) Wait(ctx context.Context) error { return wg.c.wait(ctx) }
