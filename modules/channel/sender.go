package channel

import (
	"context"

	"github.com/faio-go/faio/modules/runtime"
)

// Sender is a sending end of a channel. One Sender may be used by many
// tasks and goroutines at once; Clone makes another end of the same side,
// which counts separately for Close. Senders come from New and Clone; a
// Sender must not be copied (go vet reports a copy). Every method but Len,
// Cap and SendCase panics on a nil or zero Sender, naming the misuse, where
// a send on a nil Go channel would block for ever; Len and Cap report 0, as
// for a nil Go channel.
type Sender[T any] struct {
	ch  *channel[T]
	end end
}

// Send delivers v: to the receiver that has waited longest, else into the
// buffer, else it waits until a receiver takes v or frees a slot for it.
// From a task it suspends the task; from a plain goroutine it blocks it.
//
// Send returns nil once v is delivered or buffered. It returns a
// *SendError[T] carrying v (errors.Is(err, ErrClosed)) when every Receiver
// has closed or this Sender is closed, including while Send waits; even if
// the buffer has room, since no one would ever receive v. It returns
// ctx.Err() when ctx ends first, before or during the wait; then v was not
// sent. A hand-off that wins the race against a cancellation is kept:
// Send then returns nil.
func (s *Sender[T]) Send(ctx context.Context, v T) error {
	if s == nil || s.ch == nil {
		badEnd("Send", "Sender")
	}
	// Charged up front: it also refuses a done ctx before anything moves,
	// and yields now and then a task whose sends never wait.
	if err := runtime.Consume(ctx); err != nil {
		return err
	}
	c := s.ch
	for retried := false; ; retried = true {
		// try, inline: as a call it cost W4 (4x4 channel) 12%.
		c.mu.Lock()
		res, peer := c.sendLocked(&s.end, v)
		c.mu.Unlock()
		switch res {
		case outcomeDone:
			peer.Wake()
			return nil
		case outcomeClosed:
			return &SendError[T]{Value: v}
		}
		// Before waiting, the task this worker would run next (often
		// the receiver just woken) runs now; then a second look.
		if retried || !runtime.RunNext(ctx) {
			break
		}
	}
	_, closed, err := c.block(ctx, &s.end, true, v)
	if err != nil {
		return err
	}
	if closed {
		return &SendError[T]{Value: v}
	}
	return nil
}

// TrySend delivers v if it can do so without waiting: to a waiting receiver
// or into the buffer. It returns ErrFull when it cannot (on a rendezvous
// channel: when no receiver is waiting), and a *SendError[T] carrying v
// when the channel or this Sender is closed. TrySend does not charge the
// cooperative budget: a task polling it in a loop should call runtime.Yield.
func (s *Sender[T]) TrySend(v T) error {
	if s == nil || s.ch == nil {
		badEnd("TrySend", "Sender")
	}
	if done, err := s.try(v); done {
		return err
	}
	return ErrFull
}

// try sends v if it can without waiting: done reports that it did, or
// found the channel closed for this Sender (err is then a *SendError[T]).
func (s *Sender[T]) try(v T) (done bool, err error) {
	c := s.ch
	c.mu.Lock()
	res, peer := c.sendLocked(&s.end, v)
	c.mu.Unlock()
	switch res {
	case outcomeDone:
		peer.Wake()
		return true, nil
	case outcomeClosed:
		return true, &SendError[T]{Value: v}
	}
	return false, nil
}

// Clone returns a new Sender of the same channel. The channel counts as
// closed for receivers only once every Sender, clones included, is closed.
// Cloning a closed Sender returns a closed Sender: a side that has ended
// cannot be reopened.
func (s *Sender[T]) Clone() *Sender[T] {
	if s == nil || s.ch == nil {
		badEnd("Clone", "Sender")
	}
	c := s.ch
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.end.closed {
		return &Sender[T]{ch: c, end: end{closed: true}}
	}
	c.senders++
	return &Sender[T]{ch: c}
}

// Close drops this Sender. Sends through it, waiting or future, fail with
// a *SendError. When it was the last open Sender, receivers take what is
// buffered and then get ErrClosed, and receivers waiting on an empty
// channel get ErrClosed at once. Closing a Sender twice returns an error
// wrapping ErrClosed and changes nothing.
func (s *Sender[T]) Close() error {
	if s == nil || s.ch == nil {
		badEnd("Close", "Sender")
	}
	return s.ch.closeSender(&s.end)
}

// Len returns the number of buffered values (0 for a nil or zero Sender).
func (s *Sender[T]) Len() int {
	if s == nil || s.ch == nil {
		return 0
	}
	return s.ch.len()
}

// Cap returns the capacity the channel was made with (0 for a nil or zero
// Sender).
func (s *Sender[T]) Cap() int {
	if s == nil || s.ch == nil {
		return 0
	}
	return s.ch.buf.Cap()
}

// SendCase returns a Select case that sends v through s. On a nil Sender
// it returns a nil Case, which Select never picks: like a nil channel in a
// select statement, a nil Sender switches its case off. It panics on a
// zero Sender.
func (s *Sender[T]) SendCase(v T) Case {
	if s == nil {
		return nil
	}
	if s.ch == nil {
		badEnd("SendCase", "Sender")
	}
	return &sendCase[T]{s: s, v: v}
}

func (c *channel[T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Len()
}
