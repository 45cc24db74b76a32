package sync

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/faio-go/faio/modules/runtime"
)

// An RWMutex is a reader/writer lock shared by faio tasks and plain
// goroutines: any number of readers or one writer hold it at a time. The
// zero value is an unlocked RWMutex; an RWMutex must not be copied after
// first use.
//
// The policy keeps both sides moving. A writer that waits stops new readers
// from entering, so a stream of readers cannot starve it: it gets the lock
// once the readers already inside leave. When a writer unlocks, every
// reader waiting at that moment is admitted together, as one batch, ahead
// of the next waiting writer, so a stream of writers cannot starve readers
// either. Writers are served in arrival order. As with sync.RWMutex, a
// reader must not take a second read lock while it holds one: a writer
// queued in between waits for the first, and the second waits for the
// writer.
//
// RLock, RUnlock, Lock and Unlock touch one atomic word while nobody waits;
// the internal lock guarding the wait lists is taken only when someone has
// to wait or be woken.
type RWMutex struct {
	// state is rwWriter | rwQueued | the number of readers holding the
	// lock (or admitted and about to run). While rwQueued is set someone
	// may be waiting: the fast paths of RLock and Lock are then off, and
	// the lock is handed out by grantLocked under mu.
	state   atomic.Int64
	mu      sync.Mutex
	writers waitList
	readers waitList
}

const (
	rwWriter     = 1 << 62
	rwQueued     = 1 << 61
	rwReaderMask = rwQueued - 1
)

// RLock locks rw for reading, waiting while a writer holds it or waits for
// it. If ctx is done first it returns ctx.Err() and rw is not locked by this
// call; a call already admitted returns nil. RLock with a done ctx returns
// ctx.Err() without locking. Like Lock, it charges the calling task's
// cooperative budget before trying.
func (rw *RWMutex) RLock(ctx context.Context) error {
	if err := runtime.Consume(ctx); err != nil {
		return err
	}
	if rw.tryRLock() {
		return nil
	}
	return rw.wait(ctx, &rw.readers)
}

// TryRLock locks rw for reading if no writer holds it or waits for it, and
// reports whether it did. It never waits.
func (rw *RWMutex) TryRLock() bool {
	if rw.tryRLock() {
		return true
	}
	if rw.state.Load()&(rwWriter|rwQueued) != rwQueued {
		return false
	}
	// A writer is queued, or was: one whose wait was cancelled stays
	// listed until its task runs. Serve the queue, which drops it, and
	// try again.
	rw.mu.Lock()
	rw.grantLocked(false)
	rw.mu.Unlock()
	return rw.tryRLock()
}

func (rw *RWMutex) tryRLock() bool {
	for {
		s := rw.state.Load()
		if s&(rwWriter|rwQueued) != 0 {
			return false
		}
		if rw.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// RUnlock undoes one RLock. The last reader to leave hands the lock to the
// oldest waiting writer. It panics if rw is not locked for reading.
func (rw *RWMutex) RUnlock() {
	// Check before changing the state, never after: decrementing a zero
	// reader count borrows into rwQueued and rwWriter, and anyone acting on
	// that word before an undo (a Lock queueing, an Unlock checking) would
	// be misled, and the undo would wipe the rwQueued a queueing Lock set.
	var s int64
	for {
		old := rw.state.Load()
		if old&rwReaderMask == 0 {
			panic("faio/sync: RUnlock of unlocked RWMutex")
		}
		if s = old - 1; rw.state.CompareAndSwap(old, s) {
			break
		}
	}
	if s&rwReaderMask == 0 && s&rwQueued != 0 {
		rw.mu.Lock()
		rw.grantLocked(false)
		rw.mu.Unlock()
	}
}

// Lock locks rw for writing, waiting until no reader or writer holds it and
// every writer that asked earlier has had its turn. If ctx is done first it
// returns ctx.Err() and rw is not locked by this call; a call already
// handed the lock returns nil. Lock with a done ctx returns ctx.Err()
// without locking. It charges the calling task's cooperative budget before
// trying.
func (rw *RWMutex) Lock(ctx context.Context) error {
	if err := runtime.Consume(ctx); err != nil {
		return err
	}
	if rw.state.CompareAndSwap(0, rwWriter) {
		return nil
	}
	return rw.wait(ctx, &rw.writers)
}

// TryLock locks rw for writing if nobody holds it or waits for it, and
// reports whether it did. It never waits.
func (rw *RWMutex) TryLock() bool {
	return rw.state.CompareAndSwap(0, rwWriter)
}

// Unlock unlocks rw for writing and admits the readers that were waiting,
// or else the oldest waiting writer. It panics if rw is not locked for
// writing.
func (rw *RWMutex) Unlock() {
	if rw.state.CompareAndSwap(rwWriter, 0) {
		return
	}
	if rw.state.Load()&rwWriter == 0 {
		panic("faio/sync: Unlock of unlocked RWMutex")
	}
	rw.mu.Lock()
	rw.state.Add(-rwWriter)
	rw.grantLocked(true)
	rw.mu.Unlock()
}

// wait queues the caller on list (readers or writers) until grantLocked
// admits it. Queueing happens in register, after the task switched away;
// register then runs grantLocked itself, since the lock may have come free
// since the fast path failed.
func (rw *RWMutex) wait(ctx context.Context, list *waitList) error {
	w := new(waiter)
	err := runtime.Suspend(ctx, func(wk runtime.Waker) bool {
		rw.mu.Lock()
		defer rw.mu.Unlock()
		w.waker = wk
		w.state = waiterQueued
		list.pushBack(w)
		// Setting rwQueued fails the fast-path CAS of anyone racing
		// with us (Unlock, RUnlock), who then comes to mu and grantLocked.
		rw.state.Or(rwQueued)
		rw.grantLocked(false)
		return true
	})
	if err != nil {
		rw.mu.Lock()
		if w.state == waiterQueued {
			w.list.remove(w)
			// A writer leaving the queue may unblock the readers.
			rw.grantLocked(false)
		}
		// waiterDone: the grant's Wake failed and it undid the grant.
		rw.mu.Unlock()
	}
	return err
}

// grantLocked hands rw to waiters as far as the policy allows: the batch of
// all waiting readers if no writer waits, or if a writer just left
// (afterWriter) and no reader is inside; else the oldest writer once no
// reader is inside. It clears rwQueued when both lists are empty. rw.mu is
// held; readers leaving (RUnlock) are the only concurrent change to state.
func (rw *RWMutex) grantLocked(afterWriter bool) {
	for {
		s := rw.state.Load()
		if s&rwWriter != 0 {
			return
		}
		inside := s & rwReaderMask
		// A cancelled writer must not hold the readers back.
		rw.dropEnded()
		nr, nw := rw.readers.len, rw.writers.len
		switch {
		case nr > 0 && (nw == 0 || afterWriter && inside == 0):
			next := s + int64(nr)
			if nw == 0 {
				next &^= rwQueued
			}
			if !rw.state.CompareAndSwap(s, next) {
				continue
			}
			// Count the batch in before waking it, so that an early
			// RUnlock cannot take the count below zero.
			for w := rw.readers.takeAll(); w != nil; {
				next := w.next
				if !w.waker.Wake() {
					rw.state.Add(-1)
				}
				w = next
			}
			// Cancelled readers may have left the lock free for a writer.
			afterWriter = false
		case nw > 0 && inside == 0:
			next := s | rwWriter
			if nr == 0 && nw == 1 {
				next &^= rwQueued
			}
			if !rw.state.CompareAndSwap(s, next) {
				continue
			}
			if rw.writers.popFront().waker.Wake() {
				return
			}
			rw.state.Add(-rwWriter)
		default:
			if nr == 0 && nw == 0 && s&rwQueued != 0 && !rw.state.CompareAndSwap(s, s&^rwQueued) {
				continue
			}
			return
		}
	}
}

// dropEnded pops the writers at the head of the queue whose wait has ended:
// only grantLocked wakes a queued writer, so such a writer was cancelled,
// and its task, which would take it off the list, may not run for long (a
// busy pinned worker). A live writer at the head stops new readers anyway,
// so the scan stops there: each node is looked at once, as it reaches the
// head. popFront marks it waiterDone, so its owner has nothing to undo.
// rw.mu is held.
func (rw *RWMutex) dropEnded() {
	for w := rw.writers.head; w != nil && w.waker.Ended(); w = rw.writers.head {
		rw.writers.popFront()
	}
}
