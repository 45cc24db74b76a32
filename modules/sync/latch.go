package sync

import "context"

// A Latch is a single-use countdown: it starts at a count, CountDown
// decrements it, and Wait waits until it reaches zero (like
// C++'s std::latch). Unlike a WaitGroup it cannot be raised again, so it
// has no reuse rules. Create one with NewLatch; the zero value is a latch
// that is already open.
type Latch struct {
	c countdown
}

// NewLatch returns a latch with count n. It panics if n is negative.
func NewLatch(n int) *Latch {
	if n < 0 {
		panic("faio/sync: negative Latch count")
	}
	l := new(Latch)
	l.c.count.Store(int64(n))
	return l
}

// CountDown decrements the count by one, opening the latch (waking every
// waiter) when it reaches zero. It panics if the latch is already open.
func (l *Latch) CountDown() {
	for {
		v := l.c.count.Load()
		if v == 0 {
			panic("faio/sync: Latch counted down below zero")
		}
		if l.c.count.CompareAndSwap(v, v-1) {
			if v == 1 {
				l.c.reachedZero()
			}
			return
		}
	}
}

// Count returns the current count.
func (l *Latch) Count() int { return int(l.c.count.Load()) }

// TryWait reports whether the latch is open, without waiting.
func (l *Latch) TryWait() bool { return l.c.count.Load() == 0 }

// Wait waits until the count is zero and returns nil, or returns ctx.Err()
// if ctx is done first (at once if ctx is already done).
func (l *Latch) Wait(ctx context.Context) error { return l.c.wait(ctx) }
