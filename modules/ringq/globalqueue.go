package ringq

import (
	"sync"
	"sync/atomic"
)

// minGlobalCap is the smallest ring a GlobalQueue allocates and the size it
// never shrinks below. The overflow batch of a default-size local queue
// (129 items) fits in it.
const minGlobalCap = 256

// GlobalQueue is an unbounded FIFO safe for any number of producers and
// consumers: the scheduler's injection queue, fed by spawns from outside the
// workers and by the overflow of full local queues (it implements Sink).
//
// It is a mutex around a power-of-two ring that doubles when full and
// halves (or more) only after a whole turnover of the ring during which at
// most a quarter of it was in use. So the steady state, even one that swings
// between empty and a large backlog, allocates nothing, while a one-off
// burst does not pin its peak memory forever. The item count is mirrored
// in an atomic so that idle workers can poll Len without taking the lock.
//
// The zero value is an empty, open queue, as NewGlobalQueue returns.
type GlobalQueue[T any] struct {
	mu     sync.Mutex
	buf    []T // len is 0 or a power of two
	head   int // index of the oldest item
	closed bool

	// peak is the largest count since the shrink window opened, and popped
	// the number of items popped since then. See shrinkIfIdle.
	peak, popped int

	// count is written only under mu, in the same critical section that
	// changes the ring, so a lock-free Load returns a size the queue really
	// had at some instant: Pop's empty fast path is still linearizable.
	count atomic.Int64
	// isClosed mirrors closed for the lock-free Closed.
	isClosed atomic.Bool
}

// NewGlobalQueue returns an empty, open queue. It allocates its ring on the
// first push.
func NewGlobalQueue[T any]() *GlobalQueue[T] {
	return &GlobalQueue[T]{}
}

// Len returns the number of items in the queue without taking the lock.
// Safe from any goroutine; with concurrent pushes and pops it is a snapshot.
func (q *GlobalQueue[T]) Len() int { return int(q.count.Load()) }

// Closed reports whether Close has been called.
func (q *GlobalQueue[T]) Closed() bool { return q.isClosed.Load() }

// Close stops the queue from taking new items: later pushes return
// ErrClosed. Items already queued stay and can still be popped. Closing
// twice is harmless.
func (q *GlobalQueue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	q.isClosed.Store(true)
	q.mu.Unlock()
}

// Push appends v. It returns ErrClosed, enqueuing nothing, once the queue is
// closed.
func (q *GlobalQueue[T]) Push(v T) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	n := int(q.count.Load())
	q.reserve(n + 1)
	q.buf[(q.head+n)&(len(q.buf)-1)] = v
	q.count.Store(int64(n + 1))
	q.peak = max(q.peak, n+1)
	return nil
}

// PushBatch appends all of items in order, under one lock acquisition. It
// returns ErrClosed, enqueuing none of them, once the queue is closed (even
// for an empty batch). It copies items and keeps no reference to the slice.
func (q *GlobalQueue[T]) PushBatch(items []T) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if len(items) == 0 {
		return nil
	}
	n := int(q.count.Load())
	q.reserve(n + len(items))
	a, b := q.span(n, len(items))
	copy(b, items[copy(a, items):])
	q.count.Store(int64(n + len(items)))
	q.peak = max(q.peak, n+len(items))
	return nil
}

// Pop removes and returns the oldest item, or the zero value and false when
// the queue is empty. It works after Close, draining what is left.
func (q *GlobalQueue[T]) Pop() (T, bool) {
	var zero T
	// Idle workers poll here; an empty queue costs one atomic load.
	if q.count.Load() == 0 {
		return zero, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	n := int(q.count.Load())
	if n == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.count.Store(int64(n - 1))
	q.shrinkIfIdle(1)
	return v, true
}

// PopBatch removes up to n of the oldest items, appends them to dst in
// order and returns the extended slice. It appends nothing when the queue is
// empty or n <= 0. It allocates only if dst lacks the capacity.
func (q *GlobalQueue[T]) PopBatch(dst []T, n int) []T {
	if n <= 0 || q.count.Load() == 0 {
		return dst
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	have := int(q.count.Load())
	k := min(n, have)
	if k == 0 {
		return dst
	}
	a, b := q.span(0, k)
	dst = append(append(dst, a...), b...)
	clear(a)
	clear(b)
	q.head = (q.head + k) & (len(q.buf) - 1)
	q.count.Store(int64(have - k))
	q.shrinkIfIdle(k)
	return dst
}

// span returns the slots of the k items starting i items after the head,
// as at most two contiguous slices. Caller holds mu; i+k <= len(buf).
func (q *GlobalQueue[T]) span(i, k int) (a, b []T) {
	start := (q.head + i) & (len(q.buf) - 1)
	if end := start + k; end <= len(q.buf) {
		return q.buf[start:end], nil
	}
	return q.buf[start:], q.buf[:k-(len(q.buf)-start)]
}

// reserve makes room for need items. Caller holds mu.
func (q *GlobalQueue[T]) reserve(need int) {
	if need <= len(q.buf) {
		return
	}
	c := max(len(q.buf), minGlobalCap)
	for c < need {
		c *= 2
	}
	q.resize(c)
}

// shrinkIfIdle counts k more pops and, once the pops since the window
// opened reach the ring's size (the ring has turned over once), shrinks the
// ring if the count never rose above a quarter of it in that window. Then a
// new window opens.
//
// Shrinking on a low count alone would reallocate on every cycle of a
// workload that drains to empty and refills: measured over a full turnover,
// the window of such a workload always contains its peak, which the ring was
// grown to hold, so it never shrinks. The new ring holds at least twice the
// window's peak, leaving the same factor-two gap to the grow threshold.
// Caller holds mu.
func (q *GlobalQueue[T]) shrinkIfIdle(k int) {
	q.popped += k
	if q.popped < len(q.buf) {
		return
	}
	if len(q.buf) > minGlobalCap && q.peak <= len(q.buf)/4 {
		c := minGlobalCap
		for c < 2*q.peak {
			c *= 2
		}
		q.resize(c)
	}
	q.popped = 0
	q.peak = int(q.count.Load())
}

// resize moves the items into a new ring of capacity c, a power of two that
// holds them all. Caller holds mu.
func (q *GlobalQueue[T]) resize(c int) {
	n := int(q.count.Load())
	buf := make([]T, c)
	if n > 0 {
		a, b := q.span(0, n)
		copy(buf[copy(buf, a):], b)
	}
	q.buf = buf
	q.head = 0
}

// GlobalQueue is the overflow sink of the local queues.
var _ Sink[int] = (*GlobalQueue[int])(nil)
