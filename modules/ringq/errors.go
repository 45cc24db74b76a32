package ringq

import "errors"

// ErrClosed is returned by GlobalQueue.Push and GlobalQueue.PushBatch once
// the queue has been closed. Nothing is enqueued when it is returned.
var ErrClosed = errors.New("faio/ringq: queue closed")

// ErrCapacity is returned (wrapped, with the offending value) by
// NewLocalQueue and NewRingBuffer when asked for a capacity they cannot
// provide. Test for it with errors.Is.
var ErrCapacity = errors.New("faio/ringq: invalid capacity")

// ErrFull is returned by LocalQueue.Push when the queue is full and no
// overflow sink was given. The item is not enqueued.
var ErrFull = errors.New("faio/ringq: queue full")
