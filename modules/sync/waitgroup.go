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
// becomes zero, every Wait returns. Add panics if the counter goes
// negative.
func (wg *WaitGroup) Add(delta int) {
	if wg.c.add(int64(delta)) < 0 {
		panic("faio/sync: negative WaitGroup counter")
	}
}

// Done decrements the counter by one.
func (wg *WaitGroup) Done() { wg.Add(-1) }

// Wait waits until the counter is zero and returns nil, or returns
// ctx.Err() if ctx is done first (at once if ctx is already done).
func (wg *WaitGroup) Wait(ctx context.Context) error { return wg.c.wait(ctx) }
