package sync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/faio-go/faio/modules/runtime"
)

// A Semaphore is a weighted semaphore: it holds a number of permits, and
// Acquire takes n of them, waiting until they are free. Waiters are served
// strictly in arrival order: a large request at the head is not overtaken
// by smaller ones behind it, so it cannot starve (the policy of
// golang.org/x/sync/semaphore). Create one with NewSemaphore.
//
// TryAcquire, and Acquire and Release while nobody waits, touch one atomic
// word; the internal lock guarding the wait list is taken only when someone
// has to wait.
type Semaphore struct {
	// state is free<<1 | semQueued. While semQueued is set the wait list
	// may be non-empty, permits are only taken under mu, in FIFO order.
	state   atomic.Int64
	size    int64
	mu      sync.Mutex
	waiters waitList
}

// ErrTooManyPermits is returned by Acquire for more permits than the
// semaphore's size: they can never be free at once.
var ErrTooManyPermits = errors.New("faio/sync: Acquire of more permits than the semaphore's size")

const (
	semQueued = 1
	// MaxSemaphoreSize is the largest size NewSemaphore accepts.
	MaxSemaphoreSize = 1<<62 - 1
)

// NewSemaphore returns a semaphore with n free permits, n being also the
// most that may be held at once. It panics if n is negative or above
// MaxSemaphoreSize.
func NewSemaphore(n int64) *Semaphore {
	if n < 0 || n > MaxSemaphoreSize {
		panic("faio/sync: semaphore size out of range")
	}
	s := &Semaphore{size: n}
	s.state.Store(n << 1)
	return s
}

// Acquire takes n permits, waiting (suspending the calling task, or
// blocking the calling goroutine) until they are free and every earlier
// waiter has been served. On success it returns nil. On failure it returns
// ctx.Err() and leaves the semaphore unchanged; a call that had already
// been granted its permits returns nil, whatever ctx does afterwards. A
// request for more than the semaphore's size, which could never succeed,
// returns ErrTooManyPermits at once (golang.org/x/sync/semaphore waits for
// ctx instead: with a ctx that never ends, for good). Acquire with a done
// ctx returns ctx.Err() at once. It panics if n is negative.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	if n < 0 {
		panic("faio/sync: semaphore weight < 0")
	}
	if err := runtime.Consume(ctx); err != nil {
		return err
	}
	if n > s.size {
		return ErrTooManyPermits
	}
	if s.tryAcquire(n) {
		return nil
	}
	w := &waiter{weight: n}
	err := runtime.Suspend(ctx, func(wk runtime.Waker) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		w.waker = wk
		w.state = waiterQueued
		s.waiters.pushBack(w)
		s.setQueued()
		// The permits may have come free since the fast path failed:
		// serve the queue now, which may wake w itself.
		s.grantLocked()
		return true
	})
	if err != nil {
		s.mu.Lock()
		if w.state == waiterQueued {
			s.waiters.remove(w)
			// w may have held up smaller requests behind it.
			s.grantLocked()
		}
		// waiterDone: the grant's Wake failed and it put the permits back.
		s.mu.Unlock()
	}
	return err
}

// TryAcquire takes n permits if they are free and nobody is waiting, and
// reports whether it did; it never waits. It panics if n is negative.
func (s *Semaphore) TryAcquire(n int64) bool {
	if n < 0 {
		panic("faio/sync: semaphore weight < 0")
	}
	if s.tryAcquire(n) {
		return true
	}
	if s.state.Load()&semQueued == 0 {
		return false
	}
	// Someone is queued, or was: a waiter whose wait was cancelled stays
	// listed until its task runs. Serve the queue, which drops such
	// waiters, and try again.
	s.mu.Lock()
	s.grantLocked()
	s.mu.Unlock()
	return s.tryAcquire(n)
}

func (s *Semaphore) tryAcquire(n int64) bool {
	for {
		st := s.state.Load()
		if st&semQueued != 0 || st>>1 < n {
			return false
		}
		if s.state.CompareAndSwap(st, st-n<<1) {
			return true
		}
	}
}

// Release returns n permits and wakes the waiters they now satisfy, in
// order. It panics if n is negative or if more permits would be free than
// the semaphore's size (released more than held).
func (s *Semaphore) Release(n int64) {
	if n < 0 {
		panic("faio/sync: semaphore weight < 0")
	}
	for {
		st := s.state.Load()
		// n > size-free rather than free+n > size, which a huge n
		// overflows past the check (free never exceeds size).
		if n > s.size-st>>1 {
			panic("faio/sync: semaphore released more than held")
		}
		if st&semQueued != 0 {
			break
		}
		if s.state.CompareAndSwap(st, st+n<<1) {
			return
		}
	}
	s.mu.Lock()
	for {
		st := s.state.Load()
		if n > s.size-st>>1 {
			s.mu.Unlock()
			panic("faio/sync: semaphore released more than held")
		}
		if s.state.CompareAndSwap(st, st+n<<1) {
			break
		}
	}
	s.grantLocked()
	s.mu.Unlock()
}

// setQueued turns the fast paths off; s.mu is held.
func (s *Semaphore) setQueued() { s.state.Or(semQueued) }

// grantLocked hands free permits to the waiters at the head of the queue,
// in order, until the head asks for more than is free; it turns the fast
// paths back on when the queue empties. s.mu is held.
func (s *Semaphore) grantLocked() {
	for {
		w := s.waiters.head
		if w == nil {
			s.state.And(^int64(semQueued))
			return
		}
		if w.waker.Ended() {
			// Only this loop wakes a queued waiter, so its wait was
			// cancelled; its task may not run for long (a busy pinned
			// worker): drop it now rather than let it hold up the queue.
			s.waiters.popFront()
			continue
		}
		// The queue is not empty, so semQueued is set and both fast
		// paths are off: nobody else changes the state meanwhile.
		if s.state.Load()>>1 < w.weight {
			return
		}
		s.state.Add(-w.weight << 1)
		s.waiters.popFront()
		if !w.waker.Wake() {
			// Cancelled: its permits go back to the queue.
			s.state.Add(w.weight << 1)
		}
	}
}
