package sync

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
)

// A Mutex is a mutual exclusion lock shared by faio tasks and plain
// goroutines. A task waiting in Lock suspends (its worker runs other tasks);
// a goroutine waiting in Lock blocks. Waiters that queued get the lock in
// the order they queued, handed over directly by Unlock; a Lock spins and
// yields for a short while before it queues, and takes a free lock only
// when nobody is queued. The zero value is an unlocked Mutex; a Mutex must
// not be copied after first use.
//
// A Mutex is not tied to the task or goroutine that locked it: one may lock
// it and another unlock it, as with sync.Mutex.
type Mutex struct {
	// state is the whole lock: nil (unlocked), &mutexLocked (locked,
	// nobody queued) or the newest queued waiter (see "Mutex states").
	state atomic.Pointer[mutexWaiter]
	// handedOff is set while the lock belongs to a woken waiter that has
	// not resumed yet. Only the holder writes it. It tells a Lock that
	// spinning is pointless (see "Spinning"), never who gets the lock.
	handedOff atomic.Bool
	// fifo holds the waiters taken from state, oldest first. Only the
	// holder touches it, so it needs no synchronisation of its own.
	fifo *mutexWaiter
}

// mutexWaiter is a queued Lock call. A node is allocated for one wait and
// pushed at most once, so a pointer to it can never be re-used for another
// wait while some goroutine still holds it (the ABA problem of lock-free
// lists cannot arise, and the garbage collector frees it when the last
// reference goes).
type mutexWaiter struct {
	next  atomic.Pointer[mutexWaiter]
	waker runtime.Waker
	// goroutine: the waiter is a plain goroutine, which Unlock lets run
	// at once (see "Spinning").
	goroutine bool
	// dead is set once the wait was cancelled: the node may still be in
	// the list, where an Unlock will skip it and a Lock will prune it.
	dead atomic.Bool
}

// mutexLocked is the state of a mutex locked with nobody queued, and the
// end of every wait list.
var mutexLocked mutexWaiter

// Mutex states.
//
// The state word is nil when the mutex is unlocked, &mutexLocked when it is
// locked and nobody is queued, otherwise the head of a list of queued
// waiters that ends in &mutexLocked. Lock's fast path is one
// compare-and-swap from nil to &mutexLocked.
//
// A Lock that has to queue suspends and then, in its register function (so
// after its task has switched away, where a wake-up can only find it
// suspended), pushes a node: a CAS of state from its current value s to the
// node, whose next is s. Pushing at the head takes a single CAS and so
// makes the list LIFO; Unlock restores the order. If register finds the
// mutex unlocked instead, it takes the lock on the waiter's behalf and wakes
// it.
//
// Unlock with an empty fifo tries the CAS from &mutexLocked to nil. If
// waiters were pushed meanwhile it swaps the whole list out (leaving
// &mutexLocked), reverses it into fifo, oldest first, and wakes the first
// waiter whose Waker still takes the wake-up. The lock passes to that waiter
// without ever being unlocked, so nobody can barge in, and waiters get the
// lock in the order they were pushed (all of fifo was pushed before
// anything still in state). A waiter whose context was cancelled refuses
// the wake-up (Wake returns false) and is skipped; when nobody is left the
// mutex is unlocked. So the lock is never handed to a waiter that has
// returned, and never stays locked with no holder.
//
// fifo is touched only by the holder, and state is never nil while fifo is
// non-empty, so an unlocked state really means that nobody waits.
// Cancelled nodes stay in the list until an Unlock reaches them; a Lock
// pushing on top of such nodes pops them first, which keeps the common
// retry-with-timeout loop from piling them up.
//
// Spinning.
//
// Hand-off is fair but slow under contention: each one costs a task switch,
// and a queue, once formed, tends to persist, because every later Lock
// finds the mutex held by a waiter that is not running yet and, after a
// bounded wait, queues too; from then on every Lock is a hand-off (a
// convoy). So Lock tries hard not to queue. While a running holder has the
// lock it spins on a few loads, then yields to its worker's other tasks;
// after spinRounds such rounds the holder is a long one, and it queues.
// While the lock waits for a woken waiter to resume (handedOff), the queue
// is being served: Lock yields without counting the round (up to
// maxRounds), which lets the queue drain instead of feeding it, and the
// lock come free. It takes the lock only when it is unlocked, that is when
// nobody is queued, so queued waiters keep their order; and a Lock that
// keeps losing that race queues after spinRounds rounds, so nobody waits
// outside the queue for ever.
//
// A hand-off to a blocked goroutine is the slow case: the wake-up makes it
// runnable, but it still needs the Go scheduler to give it a thread, which
// the workers, busy with tasks, may hold for a whole preemption slice while
// the lock waits for it. Unlock therefore yields its thread right after
// such a hand-off (runtime.Gosched), and the woken goroutine, queued next on
// that thread, runs at once.

// Lock locks m. If m is held it waits, suspending the calling task (or
// blocking the calling goroutine) until m is handed to it. If ctx is done
// first, Lock returns ctx.Err() and m is not locked by this call; a call
// that had already been handed the lock returns nil, whatever ctx does
// afterwards. Lock with a done ctx returns ctx.Err() without locking, even
// if m is free.
//
// Lock charges the calling task's cooperative budget (see runtime.Consume)
// before it tries the lock, so a task looping on a free mutex yields now
// and then, without holding it.
func (m *Mutex) Lock(ctx context.Context) error {
	if err := runtime.Consume(ctx); err != nil {
		return err
	}
	if m.casFree() {
		return nil
	}
	return m.lockSlow(ctx)
}

// TryLock locks m if it is free and reports whether it did. It never
// waits and never takes the lock ahead of a queued waiter.
func (m *Mutex) TryLock() bool {
	return m.casFree()
}

// Unlock unlocks m, handing it to the oldest waiter if there is one. It
// panics if m is not locked. Unlock never blocks and may be called from any
// task or goroutine; after handing m to a blocked goroutine it yields its
// thread (runtime.Gosched) so that the goroutine runs at once.
func (m *Mutex) Unlock() {
	if m.fifo == nil && m.casHeld() {
		return
	}
	m.unlockSlow()
}

// stateWord is the state word as a plain machine word, for casFree and
// casHeld.
//
// An atomic.Pointer's CompareAndSwap is a call into the runtime that
// checks for a write barrier, then a second call for the swap itself: a
// third of an uncontended Lock and Unlock's time. The compiler turns a CAS
// of a uintptr into one instruction. Skipping the barrier is sound for the
// two values casFree and casHeld swap, and for no others: while it marks,
// the collector must see every heap pointer written into or overwritten
// in a heap word, and neither nil nor &mutexLocked (a global) is a heap
// pointer. Every swap that involves a waiter node goes through m.state.
func (m *Mutex) stateWord() *uintptr { return (*uintptr)(unsafe.Pointer(&m.state)) }

// stateWord relies on an atomic.Pointer being one machine word: this
// does not compile otherwise.
var _ [unsafe.Sizeof(atomic.Pointer[mutexWaiter]{}) - unsafe.Sizeof(uintptr(0))]struct{}
var _ [unsafe.Sizeof(uintptr(0)) - unsafe.Sizeof(atomic.Pointer[mutexWaiter]{})]struct{}

// casFree takes the lock if it is free: state nil -> &mutexLocked.
func (m *Mutex) casFree() bool {
	return atomic.CompareAndSwapUintptr(m.stateWord(), 0, uintptr(unsafe.Pointer(&mutexLocked)))
}

// casHeld frees the lock if it is held with nobody queued: state
// &mutexLocked -> nil.
func (m *Mutex) casHeld() bool {
	return atomic.CompareAndSwapUintptr(m.stateWord(), uintptr(unsafe.Pointer(&mutexLocked)), 0)
}

// Before queueing, Lock makes rounds of a yield, preceded by up to
// spinLoads loads while a running holder has the lock. It queues after
// spinRounds rounds during which a running holder had the lock, or after
// maxRounds rounds in all. Rounds during which the lock waited for a woken
// waiter are not counted: they measure how long the worker takes to get to
// that waiter (a whole pass over its run queue, when the runtime moves the
// waiter behind the others), not how long a holder holds.
//
// Measured on W3 (1,000 tasks x 1,000 increments on 2 workers): counting
// every round, with 16 rounds about a third of the runs fell into a convoy
// (~60,000 queued Locks per run, 130-750 ns each) and with 64 still some
// did; not counting the hand-off rounds, none did (~70 ns, ~4,000 queued
// Locks per run). Longer spins only add cache-line traffic for the holder.
const (
	spinRounds = 16
	maxRounds  = 4096
	spinLoads  = 8
)

func (m *Mutex) lockSlow(ctx context.Context) error {
	for rounds, all := 0, 0; rounds < spinRounds && all < maxRounds; all++ {
		if !m.handedOff.Load() {
			rounds++
			if m.state.Load() == &mutexLocked {
				for range spinLoads {
					s := m.state.Load()
					if s == nil && m.casFree() {
						return nil
					}
					if s != nil && s != &mutexLocked {
						break
					}
				}
			}
		}
		if err := runtime.Yield(ctx); err != nil {
			return err
		}
		if m.casFree() {
			return nil
		}
	}
	// Told by the caller, not by ctx: a goroutine may lock with a task's
	// context, and a task with context.Background().
	w := &mutexWaiter{goroutine: !runtime.InTask(ctx)}
	err := runtime.Suspend(ctx, func(wk runtime.Waker) bool {
		m.push(w, wk)
		return true
	})
	if err != nil {
		w.dead.Store(true)
		return err
	}
	// Running with the lock: spinning on it makes sense again.
	m.handedOff.Store(false)
	return nil
}

// push queues w (the register function of lockSlow, run after the task
// switched away), or, if m came free meanwhile, takes the lock for w.
func (m *Mutex) push(w *mutexWaiter, wk runtime.Waker) {
	w.waker = wk
	for {
		s := m.state.Load()
		switch {
		case s == nil:
			if !m.casFree() {
				continue
			}
			// Not by returning false: a cancellation may have ended the
			// wait already, and the lock would then have no holder. Wake
			// tells.
			m.handedOff.Store(true)
			if !wk.Wake() {
				m.handedOff.Store(false)
				m.Unlock()
			}
			return
		case s != &mutexLocked && s.dead.Load():
			// Pop a cancelled waiter. s was pushed once and leaves the
			// head only for good, so if the CAS succeeds s.next is still
			// the node below it.
			m.state.CompareAndSwap(s, s.next.Load())
			continue
		}
		w.next.Store(s)
		if m.state.CompareAndSwap(s, w) {
			return
		}
	}
}

func (m *Mutex) unlockSlow() {
	for {
		w := m.fifo
		if w == nil {
			s := m.state.Load()
			switch s {
			case nil:
				panic("faio/sync: unlock of unlocked mutex")
			case &mutexLocked:
				m.handedOff.Store(false)
				if m.casHeld() {
					return
				}
				continue
			}
			m.fifo = reverseLive(m.state.Swap(&mutexLocked))
			continue
		}
		m.fifo = w.next.Load()
		m.handedOff.Store(true)
		if w.waker.Wake() {
			if w.goroutine {
				goruntime.Gosched()
			}
			return
		}
	}
}

// reverseLive turns a LIFO list ending in &mutexLocked into a FIFO list
// ending in nil, dropping the waiters already known to be cancelled.
func reverseLive(s *mutexWaiter) *mutexWaiter {
	var fifo *mutexWaiter
	for s != &mutexLocked {
		next := s.next.Load()
		if !s.dead.Load() {
			s.next.Store(fifo)
			fifo = s
		}
		s = next
	}
	return fifo
}
