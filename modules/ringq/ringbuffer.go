package ringq

import "fmt"

// RingBuffer is a bounded FIFO with no locking of its own: the caller
// serializes access (the channel holds it under its own lock). Any capacity
// is allowed, not only powers of two, and capacity 0 gives a buffer that is
// always both empty and full, which is what a rendezvous channel needs.
//
// Popped slots are zeroed, so the buffer keeps no item alive. No method
// allocates.
type RingBuffer[T any] struct {
	buf  []T
	head int // index of the oldest item
	n    int // number of items
}

// NewRingBuffer returns an empty buffer holding up to capacity items. A
// negative capacity returns an error wrapping ErrCapacity.
func NewRingBuffer[T any](capacity int) (*RingBuffer[T], error) {
	if capacity < 0 {
		return nil, fmt.Errorf("%w: ring buffer capacity %d is negative", ErrCapacity, capacity)
	}
	return &RingBuffer[T]{buf: make([]T, capacity)}, nil
}

// Len returns the number of items in the buffer.
func (r *RingBuffer[T]) Len() int { return r.n }

// Cap returns the capacity the buffer was made with.
func (r *RingBuffer[T]) Cap() int { return len(r.buf) }

// Full reports whether Push would fail. A zero-capacity buffer is always
// full.
func (r *RingBuffer[T]) Full() bool { return r.n == len(r.buf) }

// Push appends v and returns true, or returns false and leaves the buffer
// unchanged when it is full.
func (r *RingBuffer[T]) Push(v T) bool {
	if r.n == len(r.buf) {
		return false
	}
	r.buf[r.index(r.n)] = v
	r.n++
	return true
}

// Pop removes and returns the oldest item, or the zero value and false when
// the buffer is empty.
func (r *RingBuffer[T]) Pop() (T, bool) {
	var zero T
	if r.n == 0 {
		return zero, false
	}
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = r.index(1)
	r.n--
	return v, true
}

// Peek returns the oldest item without removing it, or the zero value and
// false when the buffer is empty.
func (r *RingBuffer[T]) Peek() (T, bool) {
	if r.n == 0 {
		var zero T
		return zero, false
	}
	return r.buf[r.head], true
}

// index maps the i-th item counted from the head to its slot. A compare
// instead of a modulo, since the capacity need not be a power of two and
// head+i is always below 2*Cap.
func (r *RingBuffer[T]) index(i int) int {
	j := r.head + i
	if j >= len(r.buf) {
		j -= len(r.buf)
	}
	return j
}
