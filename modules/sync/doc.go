// Package sync provides synchronisation primitives for faio tasks and plain
// goroutines alike: Mutex, RWMutex, Cond, Event, Promise, Semaphore,
// WaitGroup, Latch and Barrier.
//
// A task (a function run by package runtime) that has to wait on one of
// them suspends: its worker goes on running other tasks, and the task is
// queued again when the primitive wakes it. A plain goroutine (one whose
// context carries no task) that has to wait blocks, as it would on package
// sync. Both kinds of caller can share one primitive.
//
// Every call that may wait takes a context first. It returns ctx.Err() if
// the context is done before the wait is over, and leaves the primitive as
// if the call had never been made: a lock or permit handed to a caller that
// has already given up goes to the next waiter, and a waiter whose context
// ended leaves the queue's reckoning at once, even while its task cannot
// run yet (its worker busy with another task): it holds up nobody queued
// behind it, and a Barrier does not count it. Such a call also charges
// the task's cooperative budget (runtime.Consume) when it completes at
// once, so a task looping on always-ready operations still lets the other
// tasks of its worker run. A nil context is refused with
// runtime.ErrNilContext, before anything is locked, taken or counted.
//
// All primitives are built on runtime.Suspend, which calls a register
// function on the worker only after the task has switched away: that is
// where a waiter puts itself in a wait list, so a wake-up can never find it
// still running. Mutex takes no internal lock on any path: one atomic word
// says whether it is unlocked, locked, or locked with waiters queued. The other
// primitives take an internal lock only when a caller has to wait or be
// woken, never on their uncontended paths. Waiters are served in the order
// they queued, except that RWMutex admits every waiting reader together
// once a writer leaves (see RWMutex.Unlock).
//
// Panics are kept to misuses, each named in the panic's message: those
// package sync also panics on (unlocking an unlocked lock, a negative
// WaitGroup counter, Cond.Wait without the lock), their counterparts here
// (a WaitGroup counter overflow, counting a Latch down below zero,
// releasing more semaphore permits than held, a negative weight, size or
// count), a nil mutex given to Cond.Wait, and a Barrier not made by
// NewBarrier. A panicking call changes nothing: the primitive stays usable.
// A nil pointer receiver is not checked for, as in package sync.
package sync
