package channel

import (
	"context"
	"errors"
	"iter"

	"github.com/faio-go/faio/modules/runtime"
)

// Receiver is a receiving end of a channel. One Receiver may be used by
// many tasks and goroutines at once; Clone makes another end of the same
// side, which counts separately for Close. Receivers come from New and
// Clone; a Receiver must not be copied (go vet reports a copy). Every
// method but Len, Cap and RecvCase panics on a nil or zero Receiver,
// naming the misuse, where a receive from a nil Go channel would block for
// ever; Len and Cap report 0, as for a nil Go channel.
type Receiver[T any] struct {
	ch  *channel[T]
	end end
}

// Recv takes the oldest value: from the buffer, else straight from the
// sender that has waited longest, else it waits for a sender. From a task
// it suspends the task; from a plain goroutine it blocks it.
//
// Recv returns ErrClosed once every Sender has closed and the buffer is
// drained, or when this Receiver is closed (also while Recv waits). It
// returns ctx.Err() when ctx ends first, before or during the wait; then no
// value was taken. A hand-off that wins the race against a cancellation is
// kept: Recv then returns the value and nil.
func (r *Receiver[T]) Recv(ctx context.Context) (T, error) {
	if r == nil || r.ch == nil {
		badEnd("Recv", "Receiver")
	}
	if err := runtime.Consume(ctx); err != nil {
		var zero T
		return zero, err
	}
	c := r.ch
	for retried := false; ; retried = true {
		// try, inline: as a call it cost W4 (4x4 channel) 12%.
		c.mu.Lock()
		v, res, peer := c.recvLocked(&r.end)
		c.mu.Unlock()
		switch res {
		case outcomeDone:
			peer.Wake()
			return v, nil
		case outcomeClosed:
			return v, ErrClosed
		}
		// Before waiting, the task this worker would run next (often
		// the sender just woken) runs now; then a second look.
		if retried || !runtime.RunNext(ctx) {
			break
		}
	}
	var zero T
	v, closed, err := c.block(ctx, &r.end, false, zero)
	if err != nil {
		return v, err
	}
	if closed {
		return v, ErrClosed
	}
	return v, nil
}

// TryRecv takes the oldest value if it can do so without waiting. It
// returns ErrEmpty when there is neither a buffered value nor a waiting
// sender, and ErrClosed when every Sender has closed and the buffer is
// drained or this Receiver is closed. TryRecv does not charge the
// cooperative budget: a task polling it in a loop should call
// runtime.Yield.
func (r *Receiver[T]) TryRecv() (T, error) {
	if r == nil || r.ch == nil {
		badEnd("TryRecv", "Receiver")
	}
	v, done, err := r.try()
	if !done {
		return v, ErrEmpty
	}
	return v, err
}

// try receives if it can without waiting: done reports that it did, or
// found the channel closed for this Receiver (err is then ErrClosed).
func (r *Receiver[T]) try() (v T, done bool, err error) {
	c := r.ch
	c.mu.Lock()
	v, res, peer := c.recvLocked(&r.end)
	c.mu.Unlock()
	switch res {
	case outcomeDone:
		peer.Wake()
		return v, true, nil
	case outcomeClosed:
		return v, true, ErrClosed
	}
	return v, false, nil
}

// All returns an iterator over the values received with Recv(ctx), for
// use with range:
//
//	for v := range rx.All(ctx) { ... }
//
// The loop ends when the channel is closed and drained, when this Receiver
// is closed, when ctx ends, or when Recv fails otherwise: runtime.ErrClosed
// for a task waiting on a context that is not its own while its runtime
// closes, runtime.ErrNilContext for a nil ctx. ctx.Err() tells the third
// case apart; AllErr reports the reason itself, and is the form to use
// where the other cases matter. Breaking out of the loop takes no value
// that the body does not see.
func (r *Receiver[T]) All(ctx context.Context) iter.Seq[T] {
	return func(yield func(T) bool) {
		for {
			v, err := r.Recv(ctx)
			if err != nil || !yield(v) {
				return
			}
		}
	}
}

// AllErr is All that also reports why it stopped: it yields (v, nil) for
// each value received and, if the loop ended for any reason other than the
// channel or this Receiver being closed, a last (zero, err) with Recv's
// error: ctx.Err(), or runtime.ErrClosed or runtime.ErrNilContext (see
// All).
func (r *Receiver[T]) AllErr(ctx context.Context) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			v, err := r.Recv(ctx)
			if errors.Is(err, ErrClosed) {
				return
			}
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// Clone returns a new Receiver of the same channel. Senders see the
// channel closed only once every Receiver, clones included, is closed.
// Cloning a closed Receiver returns a closed Receiver: a side that has
// ended cannot be reopened.
func (r *Receiver[T]) Clone() *Receiver[T] {
	if r == nil || r.ch == nil {
		badEnd("Clone", "Receiver")
	}
	c := r.ch
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.end.closed {
		return &Receiver[T]{ch: c, end: end{closed: true}}
	}
	c.receivers++
	return &Receiver[T]{ch: c}
}

// Close drops this Receiver. Receives through it, waiting or future, get
// ErrClosed. When it was the last open Receiver, every waiting and future
// send fails with a *SendError that returns its value, and the values still
// buffered are dropped (their sends had succeeded; drain with TryRecv
// before closing to keep them). Closing a Receiver twice returns an error
// wrapping ErrClosed and changes nothing.
func (r *Receiver[T]) Close() error {
	if r == nil || r.ch == nil {
		badEnd("Close", "Receiver")
	}
	return r.ch.closeReceiver(&r.end)
}

// Len returns the number of buffered values (0 for a nil or zero
// Receiver).
func (r *Receiver[T]) Len() int {
	if r == nil || r.ch == nil {
		return 0
	}
	return r.ch.len()
}

// Cap returns the capacity the channel was made with (0 for a nil or zero
// Receiver).
func (r *Receiver[T]) Cap() int {
	if r == nil || r.ch == nil {
		return 0
	}
	return r.ch.buf.Cap()
}

// RecvCase returns a Select case that receives through r and stores the
// value in *dst when the case fires with one (dst may be nil to discard
// it). When the case fires with ErrClosed, *dst is left unchanged, where a
// receive from a closed Go channel would have stored the zero value. On a
// nil Receiver it returns a nil Case, which Select never picks: like a nil
// channel in a select statement, a nil Receiver switches its case off.
// It panics on a zero Receiver.
func (r *Receiver[T]) RecvCase(dst *T) Case {
	if r == nil {
		return nil
	}
	if r.ch == nil {
		badEnd("RecvCase", "Receiver")
	}
	return &recvCase[T]{r: r, dst: dst}
}
