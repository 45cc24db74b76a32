package sync

import "github.com/faio-go/faio/modules/runtime"

// waiterState is where a waiter of a lock-protected primitive stands. It is
// read and written only under the primitive's lock. A waiter whose Suspend
// failed looks at it to learn what it still has to undo: runtime.Suspend
// returns only after register has returned, and does not call register at
// all when ctx is done before the worker gets to it, so waiterFresh then
// means that register never ran and never will; waiterQueued, that the
// waiter must take itself off the list; waiterDone, that the primitive
// dealt with it (its Wake failed, and the primitive undid whatever it had
// granted).
type waiterState uint8

const (
	waiterFresh  waiterState = iota // register has not run
	waiterQueued                    // in the primitive's wait list
	waiterDone                      // granted or woken by the primitive
)

// waiter is one suspended Acquire, RLock, Wait...: a node of a waitList.
// Each wait allocates its own (only on the slow path), so a node is never
// reused while a stale reference to it may still exist.
type waiter struct {
	next, prev *waiter
	list       *waitList
	waker      runtime.Waker
	weight     int64 // Semaphore: permits asked for
	state      waiterState
	leader     bool // Barrier: this waiter tripped its generation
}

// waitList is an intrusive FIFO of waiters, guarded by its owner's lock.
type waitList struct {
	head, tail *waiter
	len        int
}

func (l *waitList) pushBack(w *waiter) {
	w.list = l
	w.next = nil
	w.prev = l.tail
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.len++
}

func (l *waitList) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.next, w.prev, w.list = nil, nil, nil
	l.len--
}

// popFront removes the oldest waiter, marks it waiterDone and returns it,
// or returns nil.
func (l *waitList) popFront() *waiter {
	w := l.head
	if w != nil {
		l.remove(w)
		w.state = waiterDone
	}
	return w
}

// takeAll empties the list and returns its waiters, oldest first, linked
// through next and marked waiterDone.
func (l *waitList) takeAll() *waiter {
	w := l.head
	for x := w; x != nil; x = x.next {
		x.list = nil
		x.state = waiterDone
	}
	l.head, l.tail, l.len = nil, nil, 0
	return w
}

// wakeAll wakes a chain returned by takeAll, in order. It reads each link
// before waking, since a woken waiter owns its node again.
func wakeAll(w *waiter) {
	for w != nil {
		next := w.next
		w.waker.Wake()
		w = next
	}
}
