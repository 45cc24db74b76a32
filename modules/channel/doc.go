// Package channel provides a bounded multi-producer multi-consumer channel
// for faio-go tasks, with separate Sender and Receiver ends.
//
//	tx, rx := channel.New[int](16)
//	go func() {
//		defer tx.Close()
//		for i := range 3 {
//			if err := tx.Send(ctx, i); err != nil { ... }
//		}
//	}()
//	for v := range rx.All(ctx) { ... }
//
// Send, Recv and Select suspend the calling task when they must wait, and
// block the calling goroutine when ctx carries no task, so one channel can
// connect tasks, plain goroutines, or both. A task that passes a context
// that is not its own (context.Background() in a deferred call, say) still
// suspends, never blocking its worker; the context decides only when the
// wait is cancelled. Every wait honours its context: when
// ctx ends the operation leaves the queue and returns ctx.Err() having
// moved nothing, unless a peer completed it first, in which case it
// succeeds. A nil context is refused with runtime.ErrNilContext before
// anything moves.
//
// # How a value travels
//
// A channel holds a ring buffer of Cap() slots, a queue of waiting senders
// and a queue of waiting receivers. A send hands its value straight to the
// receiver that has waited longest, else buffers it, else queues itself. A
// receive takes the oldest buffered value and, if a sender is waiting,
// moves that sender's value into the freed slot; with nothing buffered it
// takes a waiting sender's value directly, else queues itself. So values
// are received in the order their sends completed, and with capacity 0
// (a rendezvous channel) a send completes only when a receiver takes its
// value.
//
// # Ends and closing
//
// New returns one Sender and one Receiver; Clone makes more ends of the
// same side, and Close drops one. Operations through a closed end fail with
// ErrClosed. When the last Sender closes, receivers drain the buffer and
// then get ErrClosed. When the last Receiver closes, waiting and later
// sends fail with a *SendError that gives their value back (even if the
// buffer has room: nobody would receive it) and the buffered values are
// dropped. Closing an end twice returns an error and changes no count.
//
// An end is used through its pointer and must not be copied (go vet reports
// a copy). A nil or zero end is bad input: its operations panic with a
// message naming the operation, where a nil Go channel would block for
// ever, except Len and Cap, which report 0, and SendCase and RecvCase on a
// nil end, which return the nil Case that switches a Select case off.
//
// # Waiting and cancellation
//
// Before it waits, a Send or Recv lets its worker's next task run at once
// (runtime.RunNext: often the peer it just woke, which may well answer)
// and tries again; only then does it wait (Select waits at once). The
// operation returns only after that task waits, yields or ends, so a task
// that computes for long without doing either holds it up, past its
// context's deadline too. That task runs nested on the
// waiting task's goroutine: a task must not hold a sync.Mutex (or
// sync.RWMutex, or be inside a sync.Once) across a Send, Recv or Select,
// as the runtime's Hazards say of any faio wait. A task nested under it
// that takes the same lock deadlocks for good, where faio's Mutex would
// suspend it.
//
// Waiting is built on runtime.Suspend: the waiter queues itself only after
// its task has switched away, from the register function, which first
// tries the operation once more under the lock. Each queued operation has a
// wait state (waiting, fired, cancelled); a peer completing it claims the
// state with a compare-and-swap before moving the value, and the waiter,
// woken by a cancellation, claims it for the cancellation under the
// channel's lock (a Select: under the locks of all its channels). Exactly one claim wins: if the peer's did, the operation
// happened and returns success; if the cancellation's did, the peer skips
// the waiter and serves the next one. No value is lost or duplicated. A
// peer that finds a queued waiter whose wait already ended (its deadline
// passed while its worker was busy with another task, say) settles it as
// cancelled itself: a waiter never completes with a value sent, or taken,
// after its context ended and before its task ran again.
// Operations that complete without waiting charge the task's cooperative
// budget (runtime.Consume), so a task looping on a ready channel still
// lets its worker run others.
//
// # Why a lock
//
// The state is guarded by a sync.Mutex held for a few dozen instructions
// and never across a suspension. Each operation changes the buffer and the
// two queues together, and a hand-off must be decided atomically with the
// state of both queues and the claim of the waiter served; a lock-free
// design would need a multi-word protocol for that (Go's own channels use a
// lock too). Since the lock is only ever held for one such short critical
// section, a task that finds it taken waits for that section to end
// (sync.Mutex spins first), never for another task's wait: waiting always
// goes through runtime.Suspend, with the lock released.
//
// # Select
//
// Select waits on several SendCase and RecvCase operations, possibly of
// different element types, and performs the first that is ready, choosing
// at random among those ready together. TrySelect is a select statement
// with a default branch: it performs a ready case or returns ErrNoneReady.
package channel
