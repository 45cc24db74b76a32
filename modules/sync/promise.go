package sync

import (
	"context"
	"errors"
	"sync/atomic"
)

// ErrAlreadySet is returned by Promise.Set when the promise already has a
// value.
var ErrAlreadySet = errors.New("faio/sync: promise already set")

// A Promise is a one-shot value: one party sets it once, any number of
// tasks and goroutines wait for it. The zero value is an unset promise; a
// Promise must not be copied after first use.
type Promise[T any] struct {
	claimed atomic.Bool // the one Set allowed has begun
	ready   Event       // set once val is written
	val     T
}

// Set stores v and wakes every waiter. Only the first Set succeeds; later
// calls return ErrAlreadySet and change nothing.
func (p *Promise[T]) Set(v T) error {
	if !p.claimed.CompareAndSwap(false, true) {
		return ErrAlreadySet
	}
	// val is written before the event is set, and read only after a Wait
	// (or IsSet) observed it set: the event's atomic word orders the two.
	p.val = v
	p.ready.Set()
	return nil
}

// Wait waits until the promise is set and returns its value, or returns the
// zero value and ctx.Err() if ctx is done first (at once if ctx is already
// done).
func (p *Promise[T]) Wait(ctx context.Context) (T, error) {
	if err := p.ready.Wait(ctx); err != nil {
		var zero T
		return zero, err
	}
	return p.val, nil
}

// Get returns the value and true if the promise is set, without waiting;
// otherwise the zero value and false.
func (p *Promise[T]) Get() (T, bool) {
	if !p.ready.IsSet() {
		var zero T
		return zero, false
	}
	return p.val, true
}
