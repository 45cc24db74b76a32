package channel

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed reports an operation on a channel whose other side is gone
	// (a Recv after the last Sender closed and the buffer drained, a Send
	// after the last Receiver closed) or through an end that was itself
	// closed. Send and TrySend return it wrapped in a *SendError that gives
	// the value back.
	ErrClosed = errors.New("faio/channel: closed")

	// ErrFull is returned by TrySend when the value could neither be handed
	// to a waiting receiver nor buffered. The value was not sent.
	ErrFull = errors.New("faio/channel: full")

	// ErrEmpty is returned by TryRecv when there is neither a buffered
	// value nor a waiting sender.
	ErrEmpty = errors.New("faio/channel: empty")

	// ErrNoneReady is returned by TrySelect, which then did nothing, when
	// no case could proceed without waiting.
	ErrNoneReady = errors.New("faio/channel: no case ready")

	// ErrDuplicateCase is returned by Select, which then does nothing, when
	// one Case appears twice among its cases or is in use by another Select
	// that has not returned yet.
	ErrDuplicateCase = errors.New("faio/channel: the same Case twice in one Select or in two at once")

	// errEndClosed is what Close returns for an end closed before: the
	// counts of ends were not touched.
	errEndClosed = fmt.Errorf("%w: end already closed", ErrClosed)
)

// SendError is the error of a send that failed because the channel, or the
// Sender it went through, was closed. It carries the value that was not
// delivered, so the caller may keep or reroute it. errors.Is(err, ErrClosed)
// holds for it.
type SendError[T any] struct {
	// Value is the value that was not delivered.
	Value T
}

// Error implements error.
func (e *SendError[T]) Error() string { return "faio/channel: send on closed channel" }

// Unwrap returns ErrClosed.
func (e *SendError[T]) Unwrap() error { return ErrClosed }
