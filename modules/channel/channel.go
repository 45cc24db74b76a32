package channel

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/faio-go/faio/modules/ringq"
	"github.com/faio-go/faio/modules/runtime"
)

// channel is the state both ends share. Everything in it is guarded by
// mu, which is held for a few dozen instructions at a time and never across
// a suspension (see the package comment for why a lock and not a lock-free
// design).
//
// Invariants while mu is not held, stale nodes aside (waits that were
// cancelled or whose Select fired elsewhere, which take and close skip):
//   - recvq is non-empty only when the buffer is empty;
//   - sendq is non-empty only when the buffer is full.
//
// So a sender meets waiting receivers only when there is nothing buffered
// that they ought to get first, and a receiver that frees a slot refills it
// from the oldest waiting sender: values leave in the order sends completed.
type channel[T any] struct {
	chanLock
	buf       *ringq.RingBuffer[T]
	sendq     queue[T]
	recvq     queue[T]
	senders   int // open Sender ends; 0 means no value will ever be sent again
	receivers int // open Receiver ends; 0 means sends fail from now on
	// spare holds one recycled waiter ahead of nodes: a channel with one
	// waiter at a time (a ping-pong, a pipeline stage) reuses it with a
	// swap, where the pool costs a pin and an unpin each way.
	spare atomic.Pointer[waiter[T]]
	nodes sync.Pool
}

// chanLock is the part of a channel Select needs without knowing T: the
// lock, and an id giving all channels one order to be locked in.
type chanLock struct {
	mu sync.Mutex
	id uint64
}

var lastChanID atomic.Uint64

// end is the state of one Sender or Receiver: whether it was closed.
// Guarded by the channel's lock.
//
// An end must not be copied: a copy would share the channel but not the
// closed flag, so closing both would count the side down twice. noCopy
// makes go vet report a copy.
type end struct {
	_      noCopy
	closed bool
}

// noCopy is go vet's marker for values that must not be copied (see
// sync.noCopy): copylocks reports a copy of anything holding a Lock method.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// badEnd panics for operation op on a nil or zero Sender or Receiver
// (side), which has no channel. Out of line, to keep it off the callers'
// fast paths.
//
//go:noinline
func badEnd(op, side string) {
	panic("faio/channel: " + op + " on a nil or zero " + side + " (ends come from New and Clone)")
}

// outcome is what an attempt under the lock came to.
type outcome uint8

const (
	outcomeWait   outcome = iota // nothing ready: the caller must wait
	outcomeDone                  // the value moved
	outcomeClosed                // the channel or the end is closed
)

// New returns the two ends of a new channel that buffers up to capacity
// values. Capacity 0 makes a rendezvous channel: a send completes only when
// a receiver takes its value. Each end starts as the only one of its side;
// Clone makes more.
//
// New panics if capacity is negative, as make(chan T, capacity) does. The
// buffer is allocated up front, as make's is, with the same outcomes for
// a capacity too large: a panic when the buffer's size cannot even be
// expressed, a fatal out-of-memory error when it can but memory runs out.
func New[T any](capacity int) (*Sender[T], *Receiver[T]) {
	buf, err := ringq.NewRingBuffer[T](capacity)
	if err != nil {
		panic(fmt.Sprintf("channel.New: capacity %d is negative", capacity))
	}
	c := &channel[T]{buf: buf, senders: 1, receivers: 1}
	c.id = lastChanID.Add(1)
	c.nodes.New = func() any {
		n := &waiter[T]{ch: c}
		n.w = &n.own
		n.register = n.arm
		return n
	}
	return &Sender[T]{ch: c}, &Receiver[T]{ch: c}
}

// sendLocked tries to send v through e without waiting: straight to the
// oldest waiting receiver, else into the buffer. It returns the Waker of the
// receiver served, to be woken once mu is released.
func (c *channel[T]) sendLocked(e *end, v T) (outcome, runtime.Waker) {
	// Checked first: a send after the last receiver closed fails even when
	// the buffer has room, since nobody will ever take the value.
	if e.closed || c.receivers == 0 {
		return outcomeClosed, runtime.Waker{}
	}
	if r := c.recvq.take(); r != nil {
		r.val = v
		return outcomeDone, r.w.waker
	}
	if c.buf.Push(v) {
		return outcomeDone, runtime.Waker{}
	}
	return outcomeWait, runtime.Waker{}
}

// recvLocked tries to receive through e without waiting: from the buffer
// (refilling the freed slot from the oldest waiting sender), else straight
// from the oldest waiting sender. It returns the Waker of the sender
// served, to be woken once mu is released.
func (c *channel[T]) recvLocked(e *end) (T, outcome, runtime.Waker) {
	var zero T
	if e.closed {
		return zero, outcomeClosed, runtime.Waker{}
	}
	if v, ok := c.buf.Pop(); ok {
		if s := c.sendq.take(); s != nil {
			c.buf.Push(s.val)
			s.val = zero
			return v, outcomeDone, s.w.waker
		}
		return v, outcomeDone, runtime.Waker{}
	}
	if s := c.sendq.take(); s != nil {
		v := s.val
		s.val = zero
		return v, outcomeDone, s.w.waker
	}
	if c.senders == 0 {
		return zero, outcomeClosed, runtime.Waker{}
	}
	return zero, outcomeWait, runtime.Waker{}
}

// block waits for a Send (send true, value v) or a Recv through e that
// found nothing ready. It returns the value received and whether the wait
// ended with the channel closed, or ctx's error when ctx ended first, in
// which case nothing was sent or received.
func (c *channel[T]) block(ctx context.Context, e *end, send bool, v T) (T, bool, error) {
	n := c.spare.Swap(nil)
	if n == nil {
		n = c.nodes.Get().(*waiter[T])
	}
	n.own.state.Store(waiting)
	n.send, n.end, n.val = send, e, v
	if err := runtime.Suspend(ctx, n.register); err != nil {
		c.mu.Lock()
		// A peer may have settled the wait as cancelled already (see
		// claim); then nobody claimed it either.
		if n.own.state.CompareAndSwap(waiting, cancelled) || n.own.state.Load() == cancelled {
			if n.queued {
				if send {
					c.sendq.remove(n)
				} else {
					c.recvq.remove(n)
				}
			}
			armed := n.armed
			c.mu.Unlock()
			// register has run (armed), or never will: Suspend resumes a
			// task only after its register returned, and skips register
			// for a task cancelled before its worker got to it. A node
			// register never saw is left to the collector: this path is
			// rare, and recycling only what arm published keeps the
			// pool's invariant local to arm.
			if armed {
				c.recycle(n)
			}
			var zero T
			return zero, false, err
		}
		// A peer claimed the wait before the cancellation could: the
		// operation happened. Its writes were made under mu, which we just
		// held.
		c.mu.Unlock()
	}
	// Woken by the claimer, after it wrote val and closed.
	val, closed := n.val, n.closed
	c.recycle(n)
	return val, closed, nil
}

func (c *channel[T]) recycle(n *waiter[T]) {
	var zero T
	n.val, n.end, n.closed, n.armed = zero, nil, false, false
	// The spare outlives GC cycles (the pool does not): it must not keep
	// the last waiter's task alive.
	n.own.waker = runtime.Waker{}
	if !c.spare.CompareAndSwap(nil, n) {
		c.nodes.Put(n)
	}
}

// arm is the register function of a plain Send or Recv: it runs on the
// worker once the task has switched away (or on the calling goroutine).
// Under the lock it tries the operation again, since a peer may have come
// in the meantime, and queues the node only if it still cannot complete.
func (n *waiter[T]) arm(wk runtime.Waker) bool {
	c := n.ch
	c.mu.Lock()
	n.armed = true
	if n.own.state.Load() != waiting {
		// Cancelled before we ran: the owner has gone on without us.
		c.mu.Unlock()
		return true
	}
	var res outcome
	var peer runtime.Waker
	if n.send {
		res, peer = c.sendLocked(n.end, n.val)
	} else {
		n.val, res, peer = c.recvLocked(n.end)
	}
	if res == outcomeWait {
		n.own.waker = wk
		if n.send {
			c.sendq.push(n)
		} else {
			c.recvq.push(n)
		}
		c.mu.Unlock()
		return true
	}
	n.closed = res == outcomeClosed
	n.own.state.Store(fired)
	c.mu.Unlock()
	peer.Wake()
	return false
}

// closeSender closes the Sender end e.
func (c *channel[T]) closeSender(e *end) error {
	c.mu.Lock()
	if e.closed {
		c.mu.Unlock()
		return errEndClosed
	}
	e.closed = true
	if c.senders == 0 {
		// A copy of an end whose side has closed (vet reports the
		// copy): counting it down would take the count below zero,
		// and receivers would wait for a Sender that does not exist.
		c.mu.Unlock()
		return errEndClosed
	}
	c.senders--
	var wakers []runtime.Waker
	if c.senders == 0 {
		// Waiting receivers imply an empty buffer: they get ErrClosed now.
		// Waiting senders can only be sends through ends closed under them.
		wakers = c.recvq.failAll(wakers)
		wakers = c.sendq.failAll(wakers)
	} else {
		wakers = c.sendq.failEnd(e, wakers)
	}
	c.mu.Unlock()
	for _, w := range wakers {
		w.Wake()
	}
	return nil
}

// closeReceiver closes the Receiver end e.
func (c *channel[T]) closeReceiver(e *end) error {
	c.mu.Lock()
	if e.closed {
		c.mu.Unlock()
		return errEndClosed
	}
	e.closed = true
	if c.receivers == 0 {
		// A copy of an end whose side has closed, as in closeSender.
		c.mu.Unlock()
		return errEndClosed
	}
	c.receivers--
	var wakers []runtime.Waker
	if c.receivers == 0 {
		wakers = c.sendq.failAll(wakers)
		wakers = c.recvq.failAll(wakers)
		// Nobody can receive them any more; drop them so the buffer keeps
		// nothing alive.
		for c.buf.Len() > 0 {
			c.buf.Pop()
		}
	} else {
		wakers = c.recvq.failEnd(e, wakers)
	}
	c.mu.Unlock()
	for _, w := range wakers {
		w.Wake()
	}
	return nil
}
