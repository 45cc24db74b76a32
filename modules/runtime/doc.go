// Package runtime is faio-go's task scheduler: a pool of workers, each
// owning a local run queue, an io_uring and a timer wheel, runs tasks as
// pooled stackful coroutines whose handle is a context.Context.
//
//	rt, err := runtime.New(runtime.Config{}) // zero value: sane defaults
//	if err != nil { ... }
//	defer rt.Close()
//	sum, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
//		h := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return 1, nil })
//		if err := runtime.Sleep(ctx, 10*time.Millisecond); err != nil {
//			return 0, err
//		}
//		return h.Join(ctx)
//	})
//
// # Tasks
//
// A task is a Go function run on a coroutine (iter.Pull): a worker resumes
// it, it runs on the worker's thread until it finishes or suspends, and
// suspending switches straight back to the worker loop, without the Go
// scheduler. Coroutines are pooled: creating one costs about a microsecond,
// a resume and switch back about a tenth of that.
//
// The *Task is the context its function receives. Every faio blocking call
// takes that context first and suspends the task instead of blocking the
// worker: Sleep, Yield, JoinHandle.Join, and, in other packages, locks,
// channels and I/O, all built on Suspend. Cancelling the context (through
// JoinHandle.Cancel, the parent context, a deadline, or Close) wakes the
// task from whatever it waits on with ctx.Err().
//
// The same calls work from plain goroutines, whose context carries no task:
// they block the goroutine. So faio primitives can be shared between tasks
// and ordinary Go code.
//
// # Structure
//
// BlockOn runs a root task and returns once it and everything spawned under
// it have finished; WaitAll does so for several roots. Spawn inside a task
// starts a child whose context derives from the parent's; SpawnOn starts a
// task from outside. A panicking task does not take the process down: Join
// returns a *PanicError (Config.PanicPolicy can make panics fatal instead).
//
// # Scheduling
//
// Each worker loops: take the next task (the task just spawned first, from
// the LIFO slot; then woken tasks, ahead of the local queue of new and
// yielded tasks, which goes first once every 64 ticks; the global queue
// every GlobalQueueInterval ticks), else steal half of the busiest
// worker's queue, else drive its ring and timers, else sleep until a
// wake-up, a completion or its next timer. On io_uring a worker sleeps in
// Go's netpoller, on an eventfd its ring signals for completions, so
// a sleeping worker holds no P and no thread (see driver.Ring). Its ring is
// set up with COOP_TASKRUN: a completion is posted by the thread that
// submitted the operation when that thread next enters the kernel (or at
// once if it sleeps), never by interrupting it; on the
// portable backend it sleeps on Go primitives. At most
// half of the workers search for work at once and a sleeper is woken only
// when nobody searches (package statemachine states the protocol that
// keeps wake-ups from being lost). When a task finishes and the next one
// is fresh, the finished task's coroutine runs it without a switch back to
// the loop. A task about to wait may run the task its worker would choose
// next itself, nested on its own goroutine (RunNext, which package
// channel calls): a hand-off between two tasks then costs two switches and
// no turn of the loop instead of four switches and two turns. The count of a task's live children, which tells when it and
// everything under it have finished, is kept in batches so that the cores
// running a parent's children do not pass its cache line back and forth:
// the parent's own spawns count them 64 at a time, and a worker takes the
// children that finished on it off the count in one step as soon as it
// turns to anything but another child of the same parent.
//
// A timer belongs to the wheel of the worker the task suspended on, but
// any worker fires the timers of a peer that has fallen a tick behind (one
// that runs a long task, or that Go has descheduled), as Go's scheduler
// runs the timers of any P: a busy worker does not hold up the runtime's
// timers. A worker that sleeps learns of them from the watchdog (see
// Config.StallThreshold), which wakes it for a worker stuck with overdue
// timers; with the watchdog off, timers armed while every other worker
// sleeps wait for their own worker.
//
// # Pinned workers
//
// Config.PinnedWorkers (or FAIO_PINNED=1) locks each worker to an OS
// thread of its own, so a task's thread never changes and a ring's
// completions are posted by the thread that waits for them. Go resumes a
// coroutine only on the thread that created it, so on pinned workers a
// task runs where it started until it ends, and a task woken anywhere is
// queued to its own worker. Spawn from a task therefore places the new
// task: on the worker with the fewest live tasks when its own has at least
// two more, else on its own (so a spawner and the first task it spawns
// stay together, and a server's connections alternate). Workers do not
// steal from each other, except tasks not yet started from a worker the
// watchdog finds stuck. Work whose tasks talk across workers pays a
// cross-thread wake-up per message; the default, which moves tasks
// freely, is as fast on a server and faster elsewhere.
//
// # I/O
//
// Submit runs an io_uring operation (an Op) on the worker of the calling
// task: the task suspends, the worker batches the submission with others
// and requeues the task with the completion. Cancelling the context cancels
// the operation in the kernel, and Submit returns only once the kernel has
// let go of the operation's memory. Package aio (module modules/aio) builds
// files, TCP and UDP on it; a plain goroutine names the runtime its I/O
// runs on with WithRuntime.
//
// Where there is no ring (BackendPortable), a task waits for a descriptor
// to become ready instead: RegisterFD puts it in the runtime's epoll
// instance, and FD.Wait retries an operation each time it is ready, the
// task suspended in between. The workers collect the readiness as they
// would reap a ring, so a busy worker wakes such tasks itself.
//
// # Hazards
//
// A task that blocks in plain Go code (time.Sleep, a Go channel, a long
// computation, a mutex from package sync) holds its worker: the tasks
// queued behind it wait. A watchdog notices a worker stuck on one task
// while others wait (Config.StallThreshold), counts it in Stats, reports it
// to Config.OnStall and wakes another worker to steal the waiting tasks
// and to reap the blocked worker's ring (the completions of operations
// that other tasks started there); but the blocked worker itself is lost
// until the call returns; on pinned workers the tasks that share it, and
// its ring, wait too, however long. Use the faio
// equivalents, or call blocking code (http.Client.Do, cgo, package sync)
// through Blocking, which runs it on a goroutine of its own while the task
// is suspended. Do not hold such a mutex across a faio wait: a
// task that needs it, run meanwhile on the same worker (or nested under
// the waiter, see RunNext), blocks the worker and can deadlock with the
// holder; faio's Mutex suspends instead. (A faio call made by a task with a context that is
// not its own, such as context.Background() in a deferred Close, still
// suspends the task: the context only decides cancellation, and Close.)
//
// Tasks are cancelled, never killed: Close waits for every task to return.
// It ends every faio wait of a task on a context that can be cancelled
// (a plain goroutine's waits do not hold it, and end with their context):
// those on a task's context with the context's error, those on a context
// that derives from no task with ErrClosed (and such waits begun once
// Close has begun, and Yield on such a context, fail at once), so a task
// in the Accept of a net.Listener adapter does not hold it. Waits on a
// context that can never be cancelled (context.Background(),
// context.WithoutCancel; a task's cleanup) run as usual, and so do waits on
// a context cut from its task's cancellation by WithoutCancel and then
// given its own (WithTimeout(WithoutCancel(ctx), d), a bounded cleanup):
// its values still name the task, so it counts as derived from it, and it
// ends with its own deadline or cancel.
//
// A task that fails (returns an error or panics) while nobody joins its
// handle is not lost silently: the failure is reported once, to
// Config.OnTaskFailure or by default to the standard logger with the
// panic's stack, when the BlockOn it ran under returns, when its handle is
// garbage collected, or at Close. Join the handle, or set the hook, to
// handle failures yourself.
//
// A worker whose io_uring can no longer be entered (its descriptor closed
// or reused by mistake elsewhere in the program) stops the process with a
// driver.RingError, as Go's netpoller does when its epoll descriptor fails:
// operations in flight there can neither complete nor be cancelled safely.
package runtime
