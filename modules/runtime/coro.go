package runtime

import (
	"context"
	"fmt"
	"iter"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio/modules/timerwheel"
)

// coro is a pooled stackful coroutine. Its goroutine runs one task's
// function at a time; between tasks it waits in yield for the next one.
// Creating a coroutine costs about a microsecond, a resume and yield about a
// tenth of that, hence the pool.
type coro struct {
	next    func() (struct{}, bool)
	stop    func()
	yield   func(struct{}) bool
	goid    atomic.Uintptr // identity (getg) of the coroutine's goroutine, set when it starts
	task    *Task
	watched atomic.Pointer[Task] // task, for the watchdog (which reads it from its own goroutine)
	owner   *worker              // the worker that created it: on pinned workers, the only one that may resume it

	// Why the task switched back, and the suspension it asks the worker
	// to complete. They live here, not in Task, because only a task that
	// holds a coroutine needs them: a task is smaller for it.
	yieldReason uint8
	kind        uint8
	ioDone      bool  // the completion of an I/O wait arrived (set by ioDone)
	closeEnds   bool  // Close ends the wait: its context derives from no task (stCloseEnds)
	budget      int32 // coop budget spent since the last resume
	suspendCtx  context.Context
	register    func(Waker) bool
	joinTarget  *Task
	sleepUntil  time.Duration
	timer       timerwheel.Handle
	timerWorker *worker
	// An I/O wait (Submit): the operation and its completion (and
	// ioDone above, beside the other small fields).
	ioOp    Op
	ioRes   int32
	ioFlags uint32
	// ioWorker is the worker whose ring holds the task's current I/O
	// operation, and ioID the operation there; cancellation sends its
	// ASYNC_CANCEL request to it. Both are stored by startIO before the
	// wait is published.
	ioWorker atomic.Pointer[worker]
	ioID     atomic.Uint64
}

// Which goroutine is a faio coroutine, and which one: BlockOn and Close
// refuse to run on one, a task that suspends with a context not its own
// must still suspend rather than block its worker, and a plain goroutine
// calling faio (each of its operations asks whether it runs in a task)
// must get a fast "no".
//
// A coroutine that runs code is its worker's current (runTask stores it
// before resuming it, and only that worker's loop changes it, which waits
// in the resumption meanwhile), so the answer is among the workers'
// current coroutines: coroOf compares their identities with the caller's.
// A goroutine clears its coroutine's identity before it ends, so a later
// goroutine given the same g never passes for it. To spare plain goroutines
// the walk over every worker, coroBuckets counts live coroutines by a hash
// of their identity: a zero count is a sure "no".
//
// There is no table of coroutines: a map of them cost every new coroutine
// an entry and every ended one a deletion, and in a map of a million
// entries (W5b's sleepers, which end one after another once they wake)
// the deletions took a quarter of the time to wake them all.
var (
	coroBuckets [1 << coroBucketBits]atomic.Int32
	allWorkers  struct {
		mu   sync.Mutex
		list atomic.Pointer[[]*worker] // every worker of every open runtime
	}
)

// coroBucketBits: 65,536 counters (256 KiB). With fewer live coroutines
// than that, most goroutines find a zero.
const coroBucketBits = 16

// coroBucket is g's counter, picked by Fibonacci hashing: g is a
// goroutine's address on amd64 and arm64 (see getg), a sequential id
// elsewhere.
func coroBucket(g uintptr) *atomic.Int32 {
	return &coroBuckets[uint64(g)*0x9E3779B97F4A7C15>>(64-coroBucketBits)]
}

// coroOf returns the coroutine that g, the calling goroutine, is, or nil.
func coroOf(g uintptr) *coro {
	if coroBucket(g).Load() == 0 {
		return nil
	}
	if ws := allWorkers.list.Load(); ws != nil {
		for _, w := range *ws {
			if c := w.current.Load(); c != nil && c.goid.Load() == g {
				return c
			}
		}
	}
	return nil
}

// registerWorkers makes the workers of a new runtime known to coroOf.
func registerWorkers(ws []*worker) {
	allWorkers.mu.Lock()
	defer allWorkers.mu.Unlock()
	var list []*worker
	if old := allWorkers.list.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, ws...)
	allWorkers.list.Store(&list)
}

// unregisterWorkers forgets the workers of a closed runtime.
func unregisterWorkers(rt *Runtime) {
	allWorkers.mu.Lock()
	defer allWorkers.mu.Unlock()
	old := allWorkers.list.Load()
	if old == nil {
		return
	}
	var list []*worker
	for _, w := range *old {
		if w.rt != rt {
			list = append(list, w)
		}
	}
	allWorkers.list.Store(&list)
}

// started counts the coroutine whose goroutine g has just started.
func (c *coro) started(g uintptr) {
	coroBucket(g).Add(1)
	c.goid.Store(g)
}

// ended runs last on the coroutine's goroutine, however it ends (its loop
// stopped, a Goexit, a panic): from now on nothing may take the goroutine
// that Go gives g to next for this coroutine.
func (c *coro) ended(g uintptr) {
	c.goid.Store(0)
	coroBucket(g).Add(-1)
}

// newCoro creates a coroutine for task t, bound to it (bind) but not yet
// started: the worker's first next starts it, and it sets its identity
// (goid, which makes t.isRunning true) before t's function runs. Starting it separately, up
// to a first yield, cost every new coroutine a switch there and back (W5
// and W5b create one per sleeping task).
//
// The coroutine's body is a function literal rather than a method value,
// and runs a task's function through as few frames as it can (see
// execute): a suspended task's stack holds these frames, every new
// coroutine's stack starts at 2 KiB (growing it costs a copy), and the
// garbage collector walks every frame of every sleeping task.
func newCoro(owner *worker, t *Task) *coro {
	c := &coro{owner: owner, task: t}
	c.next, c.stop = iter.Pull(func(yield func(struct{}) bool) {
		c.yield = yield
		g := getg()
		c.started(g)
		defer c.ended(g)
		for {
			c.task.execute()
			if c.task.worker.runInline(c) {
				continue
			}
			if !yield(struct{}{}) {
				return
			}
		}
	})
	c.watched.Store(t)
	t.bind(c)
	return c
}

// onCoroutine reports whether the caller runs on a faio coroutine, that is
// in a task. Worker loops are not coroutines: the only code of others they
// run is the register functions given to Suspend, which must not block.
func onCoroutine() bool {
	return coroOf(getg()) != nil
}

// PanicError is the error Join returns for a task that panicked. Its
// message is one line, "faio task panicked: " and the value, fit for
// log.Print; the stack is in Stack, for those who want it (the default
// report of an unjoined failure, see Config.OnTaskFailure, prints it).
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the task's stack at the panic
}

// Error returns "faio task panicked: " and the panic value, without the
// stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("faio task panicked: %v", e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// execute runs the task's function on its coroutine.
func (t *Task) execute() {
	c := t.coro.Load()
	setProfLabel(t.profLabels())
	// A runtime.Goexit must not reach a pinned worker, nor a task that
	// resumed this one nested (RunNext), which Go's coroutines would end
	// with it (see retire); elsewhere it ends the worker's goroutine, which
	// onExit replaces. A Goexit is what leaves run without returning: run
	// recovers panics itself, even one raised by a deferred call while
	// a Goexit is under way (after which the Goexit resumes). With
	// PanicCrash it does not, so a panic passes here too: it is passed on.
	exited := true
	defer func() {
		if !exited {
			return
		}
		if t.rt.cfg.PanicPolicy == PanicCrash {
			if r := recover(); r != nil {
				panic(r)
			}
		}
		if w := t.worker; w.pinned || w.nested {
			c.retire(t)
		}
	}()
	t.run(c)
	exited = false
}

// run runs the task's function and notes that it is done. A panic fails the
// task with a *PanicError, unless the policy is PanicCrash.
func (t *Task) run(c *coro) {
	if t.rt.cfg.PanicPolicy == PanicCrash {
		// A panic ends the process; a Goexit passes through the
		// deferred call.
		defer t.worker.hazard.end()
		t.body.run(t)
		c.yieldReason = reasonDone
		return
	}
	defer func() {
		t.worker.hazard.end()
		if r := recover(); r != nil {
			t.body.fail(&PanicError{Value: r, Stack: debug.Stack()})
		}
		c.yieldReason = reasonDone
	}()
	t.body.run(t)
}

// retire is called by a task whose function called runtime.Goexit, from
// execute's deferred call, with the Goexit under way, on a pinned worker or
// in a nested run (RunNext). Elsewhere the Goexit ends the coroutine and
// then the worker's goroutine, which onExit replaces. A pinned worker's
// goroutine is locked to the thread that alone may resume the worker's
// suspended tasks, and a nested run's is the goroutine of the task that
// called RunNext: neither may end. The task fails with ErrGoexit and its
// coroutine switches back for good (reasonRetired) instead of ending: it
// is stopped at shutdown (unpinAtShutdown, Close), and only then does the
// Goexit finish.
func (c *coro) retire(t *Task) {
	t.body.fail(ErrGoexit)
	c.yieldReason = reasonRetired
	for c.yield(struct{}{}) {
		// Nothing resumes a retired coroutine but stop.
	}
}
