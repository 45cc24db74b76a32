package timerwheel

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// NoDeadline is what Shared.Next reports while the wheel is empty.
const NoDeadline = time.Duration(math.MaxInt64)

// Shared is a Wheel that more than one goroutine may drive. Its owner
// inserts, cancels and advances it as it would a Wheel; any other goroutine
// may advance it too, typically to fire the entries of an owner that fell
// behind (in faio, a worker that Go descheduled or that runs a long task).
// A mutex guards the wheel, and the earliest deadline is published so that
// others can see without the lock whether anything is overdue. The zero
// value is not usable; create one with NewShared.
type Shared[T any] struct {
	mu   sync.Mutex
	w    *Wheel[T]
	next atomic.Int64 // Next's value
}

// NewShared returns an empty Shared wheel at time 0; see New.
func NewShared[T any](cfg Config) (*Shared[T], error) {
	w, err := New[T](cfg)
	if err != nil {
		return nil, err
	}
	s := &Shared[T]{w: w}
	s.next.Store(int64(NoDeadline))
	return s, nil
}

// Next returns, without locking, the wheel's earliest deadline (rounded up
// to its tick), or NoDeadline if the wheel is empty. Insert, Cancel and
// Advance keep it exact; another goroutine reads it without the lock, so
// it may lag a change made meanwhile.
func (s *Shared[T]) Next() time.Duration { return time.Duration(s.next.Load()) }

// Lock takes the wheel for Insert; Unlock releases it. Holding the lock
// from Insert until a step that must come before the entry can fire
// (publishing the wait it ends, say) keeps every other goroutine's Advance
// from firing it earlier.
func (s *Shared[T]) Lock() { s.mu.Lock() }

// Unlock releases the lock Lock took.
func (s *Shared[T]) Unlock() { s.mu.Unlock() }

// Insert is Wheel.Insert. The caller holds the lock.
func (s *Shared[T]) Insert(deadline time.Duration, v T) Handle {
	h := s.w.Insert(deadline, v)
	at := s.w.now // a deadline already past is due now, as NextDeadline says
	if deadline > s.w.now {
		at = instant(ceilTicks(deadline, s.w.res), s.w.res)
	}
	if at < s.Next() {
		s.next.Store(int64(at))
	}
	return h
}

// Cancel is Wheel.Cancel, under the lock. Cancelling the earliest entry
// moves Next on, so nobody takes the wheel for overdue on its account.
func (s *Shared[T]) Cancel(h Handle) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.w.deadlineOf(h)
	if !ok {
		return false
	}
	s.w.Cancel(h)
	if d <= s.Next() {
		s.publish()
	}
	return true
}

// Len is Wheel.Len, under the lock.
func (s *Shared[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Len()
}

// fireChunk is how many entries Advance fires per taking of the lock: a
// Cancel, or a peer's TryAdvance, waits for one chunk at most, not for a
// whole burst of due entries.
const fireChunk = 256

// Advance is Wheel.Advance under the lock, taken once per fireChunk
// entries fired, and publishes the new earliest deadline. fire runs with
// the lock held: it must not call s's methods.
func (s *Shared[T]) Advance(now time.Duration, fire func(T)) int {
	n := 0
	for {
		fired, more := s.lockedChunk(now, fire)
		if n += fired; !more {
			return n
		}
	}
}

func (s *Shared[T]) lockedChunk(now time.Duration, fire func(T)) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock() // a panicking fire must not leave the wheel locked
	return s.advance(now, fire)
}

// TryAdvance is Advance as long as the lock is free: ok is false if
// another goroutine held it at first (it is then inserting, or firing the
// same entries), and n counts what fired before that.
func (s *Shared[T]) TryAdvance(now time.Duration, fire func(T)) (n int, ok bool) {
	for {
		fired, more, locked := s.tryChunk(now, fire)
		if !locked {
			return n, n > 0
		}
		if n += fired; !more {
			return n, true
		}
	}
}

func (s *Shared[T]) tryChunk(now time.Duration, fire func(T)) (fired int, more, locked bool) {
	if !s.mu.TryLock() {
		return 0, false, false
	}
	defer s.mu.Unlock()
	fired, more = s.advance(now, fire)
	return fired, more, true
}

// advance fires a chunk under the lock, publishes the earliest deadline
// and reports whether due entries remain.
func (s *Shared[T]) advance(now time.Duration, fire func(T)) (fired int, more bool) {
	fired = s.w.advance(now, fire, fireChunk)
	s.publish()
	return fired, s.w.due.head != nilIndex
}

// publish stores the wheel's earliest deadline for Next, under the lock.
func (s *Shared[T]) publish() {
	d, ok := s.w.NextDeadline()
	if !ok {
		d = NoDeadline
	}
	s.next.Store(int64(d))
}
