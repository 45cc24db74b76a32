package channel

import (
	"sync/atomic"

	"github.com/faio-go/faio/modules/runtime"
)

// States of a wait.
const (
	waiting   uint32 = iota // queued (or about to be): a peer may claim it
	fired                   // claimed: the operation completed or failed with ErrClosed
	cancelled               // its context ended first: nobody may complete it
)

// wait is one suspension of a Send, a Recv or a Select. A Send or Recv has
// one waiter node pointing at it; a Select has one node per case, queued on
// several channels, all pointing at the same wait.
//
// Whoever moves state out of waiting owns the outcome. A peer claims with
// a compare-and-swap while holding the lock of the one channel it works on,
// because nodes of one Select sit on several channels whose peers race each
// other. The owner decides on cancellation while holding the locks of all
// the channels its nodes are on, so a peer and the owner never decide at the
// same time, and the owner's view of a fired wait is never half-written.
type wait struct {
	state atomic.Uint32
	// waker resumes the owner. Written by the register function before the
	// first node is queued, read by the peer that claims a node: both under
	// that node's channel lock.
	waker runtime.Waker
	// index is the Select case that fired; written by the claimer.
	index int
}

// claim moves w from waiting to fired; only one claimer can succeed. A wait
// whose suspension is already over cannot have been woken by anyone but a
// claimer, so its context ended: claim settles it as cancelled instead and
// fails. Its owner may not run for a long time yet (its worker busy with
// another task), and must not come back with a value sent, or taken, after
// its deadline. Called under the lock of the channel the claimer works on,
// which is held wherever waker is written.
func (w *wait) claim() bool {
	if w.waker.Ended() {
		w.state.CompareAndSwap(waiting, cancelled)
		return false
	}
	return w.state.CompareAndSwap(waiting, fired)
}

// waiter is one operation queued on one channel. All fields but the ones
// fixed at creation are guarded by that channel's lock.
type waiter[T any] struct {
	prev, next *waiter[T]
	queued     bool

	w     *wait // the wait this node stands for (shared by a Select's nodes)
	index int   // the case of w's Select this node stands for
	end   *end  // the Sender or Receiver the operation goes through
	val   T     // send: the value to deliver; recv: the value delivered
	// closed reports that the wait was ended by a Close, not a hand-off.
	closed bool

	// A plain Send or Recv: the node is pooled by its channel, together
	// with its own wait and its register function, so waiting allocates
	// nothing.
	ch       *channel[T]
	own      wait
	send     bool
	armed    bool // register has taken the lock (at least once since reuse)
	register func(runtime.Waker) bool
}

// queue is an intrusive FIFO of waiters.
type queue[T any] struct {
	head, tail *waiter[T]
}

func (q *queue[T]) push(n *waiter[T]) {
	n.prev, n.next, n.queued = q.tail, nil, true
	if q.tail == nil {
		q.head = n
	} else {
		q.tail.next = n
	}
	q.tail = n
}

func (q *queue[T]) remove(n *waiter[T]) {
	if n.prev == nil {
		q.head = n.next
	} else {
		n.prev.next = n.next
	}
	if n.next == nil {
		q.tail = n.prev
	} else {
		n.next.prev = n.prev
	}
	n.prev, n.next, n.queued = nil, nil, false
}

// take removes and claims the oldest waiter whose wait is still waiting,
// dropping the stale ones met on the way (cancelled waits whose owner has
// not yet removed its node, and Select cases whose Select fired elsewhere).
// It returns nil when no live waiter is left.
func (q *queue[T]) take() *waiter[T] {
	for n := q.head; n != nil; n = q.head {
		q.remove(n)
		if n.w.claim() {
			n.w.index = n.index
			return n
		}
	}
	return nil
}

// failAll claims every live waiter of q with the closed outcome and
// appends their Wakers to wakers.
func (q *queue[T]) failAll(wakers []runtime.Waker) []runtime.Waker {
	for n := q.take(); n != nil; n = q.take() {
		n.closed = true
		wakers = append(wakers, n.w.waker)
	}
	return wakers
}

// failEnd is failAll restricted to the waiters going through e, which was
// just closed while other ends of its side remain.
func (q *queue[T]) failEnd(e *end, wakers []runtime.Waker) []runtime.Waker {
	for n := q.head; n != nil; {
		next := n.next
		if n.end == e {
			q.remove(n)
			if n.w.claim() {
				n.w.index = n.index
				n.closed = true
				wakers = append(wakers, n.w.waker)
			}
		}
		n = next
	}
	return wakers
}
