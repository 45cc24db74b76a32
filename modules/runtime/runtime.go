package runtime

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio/modules/ringq"
	"github.com/faio-go/faio/modules/statemachine"
	"github.com/faio-go/faio/modules/timerwheel"
	"github.com/faio-go/faio/modules/watchdog"
)

// Errors returned by the runtime.
var (
	// ErrClosed: the runtime is closed (or closing) and runs nothing more.
	ErrClosed = errors.New("faio/runtime: closed")
	// ErrOnWorker: a call that waits for the runtime (BlockOn, WaitAll,
	// Close) was made from a task (of any runtime): in one of its own it
	// would deadlock, in another's it would hold that worker.
	ErrOnWorker = errors.New("faio/runtime: BlockOn, WaitAll and Close wait for the runtime and cannot run in one of its tasks: " +
		"inside a task, Spawn and Join the work instead of BlockOn; call Close from the goroutine that owns the runtime, " +
		"after its BlockOn returns (or Cancel the tasks to end them)")
	// ErrNoRuntime: a context that names no runtime (it is neither a
	// task's nor from WithRuntime) was given where one is needed: Spawn,
	// Submit, and the I/O functions such as Open or Listen. From a plain
	// goroutine, use SpawnOn and SubmitOn, and give I/O a context from
	// WithRuntime.
	//
	// Spawn needs a task's context, and Submit must be called by a task,
	// even when the context names a runtime (one from WithRuntime): their
	// error then says so instead, and errors.Is(err, ErrNoRuntime) holds
	// for it too.
	ErrNoRuntime = errors.New("faio/runtime: the context names no runtime (it is neither a task's nor from WithRuntime): " +
		"from a plain goroutine, spawn with SpawnOn(rt, fn), submit with SubmitOn(ctx, rt, op), " +
		"and give I/O calls a context from WithRuntime(ctx, rt)")
	// ErrNilContext: a nil context.Context was given to a call that takes
	// one (Sleep, Suspend, Join, Submit, Spawn, and the locks, channels
	// and I/O built on them). The call does nothing: no lock is taken, no
	// value sent or received, no task started. In a task, pass the task's
	// context (or one derived from it); elsewhere, context.Background() or
	// a context of your own.
	ErrNilContext = errors.New("faio/runtime: nil context: pass the task's context, or context.Background() outside tasks")
	// ErrNilRuntime: a nil *Runtime, or one not made by New (the zero
	// Runtime), was given to BlockOn, WaitAll, SpawnOn or SubmitOn, or had
	// Close or RegisterFD called on it. Nothing ran.
	ErrNilRuntime = errors.New("faio/runtime: nil or zero *Runtime: make one with New")
	// ErrNilHandle: Join was called on a nil *JoinHandle, or on the zero
	// JoinHandle (one that Spawn or SpawnOn did not return): there is no
	// task to wait for.
	ErrNilHandle = errors.New("faio/runtime: nil or zero JoinHandle: handles come from Spawn and SpawnOn")
	// ErrNilFunc: a nil function was given to a call that runs one
	// (Spawn, SpawnOn, BlockOn, WaitAll, Timeout, Blocking, Suspend,
	// FD.Wait). Nothing ran: no task started, no wait began.
	ErrNilFunc = errors.New("faio/runtime: nil function: pass the function to run")
	// ErrSelfJoin: a task called Join on its own handle, which would wait
	// for ever (until its context ended) for itself to finish.
	ErrSelfJoin = errors.New("faio/runtime: a task joined itself: it would wait for its own end")
	// ErrGoexit: the task called runtime.Goexit (t.FailNow in a test, say).
	ErrGoexit = errors.New("faio/runtime: task called runtime.Goexit")
)

// misplacedError is ErrNoRuntime for a context that names a runtime but
// is not what the call needs (a task's): its message says so and what to
// call instead, and errors.Is(err, ErrNoRuntime) holds.
type misplacedError struct{ msg string }

func (e *misplacedError) Error() string { return e.msg }

// Unwrap returns ErrNoRuntime.
func (e *misplacedError) Unwrap() error { return ErrNoRuntime }

var (
	// errSpawnNoTask: Spawn given a context that names a runtime but
	// belongs to no task (WithRuntime's).
	errSpawnNoTask error = &misplacedError{"faio/runtime: Spawn needs a task's context, and this one names a runtime but is not a task's " +
		"(it is from WithRuntime): from a plain goroutine, spawn with SpawnOn(rt, fn)"}
	// errSubmitNoTask: Submit called off a task with a context that names
	// a runtime (WithRuntime's, or a task's handed to a goroutine).
	errSubmitNoTask error = &misplacedError{"faio/runtime: Submit must be called by a task, and the context names a runtime " +
		"but the caller is not its task: from a plain goroutine, submit with SubmitOn(ctx, rt, op)"}
)

// Runtime is a pool of workers running faio tasks. Create it with New and
// release it with Close. A nil *Runtime and the zero Runtime are not
// usable: the functions and methods that take one return ErrNilRuntime
// (Stats, Workers and Backend return zero values).
type Runtime struct {
	cfg     Config
	workers []*worker
	global  *ringq.GlobalQueue[*Task]
	sm      *statemachine.StateMachine
	start   time.Time

	root    *Task // parent of every task spawned from outside
	nextID  atomic.Uint64
	idle    chan struct{}
	idleMu  sync.Mutex
	closing atomic.Bool // Close has begun: no new tasks
	// shutdown tells the workers to leave their loops (after every task
	// has finished).
	shutdown  atomic.Bool
	closeOnce sync.Once
	closeErr  error
	workerWG  sync.WaitGroup

	spawnedOutside   atomic.Uint64
	completedOutside atomic.Uint64
	ioErrors         atomic.Uint64
	backend          Backend // BackendIOUring or BackendPortable
	watchdog         *watchdog.Watchdog
	failures         failures
	// fdp is the readiness poller of RegisterFD, made at its first call;
	// fdpReady is its poller once made, for the workers to collect from.
	fdp      fdPollerOnce
	fdpReady atomic.Pointer[fdPoller]
}

// New starts a runtime configured by cfg (the zero Config means defaults).
// It fails with an error wrapping ErrInvalidConfig for a bad Config, and,
// when the backend is BackendIOUring, with the kernel's reason if io_uring
// is missing or refused (BackendAuto then falls back to BackendPortable).
func New(cfg Config) (*Runtime, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	sm, err := statemachine.New(cfg.Workers)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{
		cfg:    cfg,
		global: ringq.NewGlobalQueue[*Task](),
		sm:     sm,
		start:  time.Now(),
	}
	if testHookStart != nil {
		rt.start = testHookStart(rt.start)
	}
	rt.root = &Task{rt: rt}
	rt.root.flags.Store(flagLinked | flagExternal) // its context is Background
	rt.backend = cfg.IOBackend
	if rt.backend == BackendAuto {
		rt.backend = autoBackend
	}
	for i := 0; i < cfg.Workers; i++ {
		w, err := rt.newWorker(i)
		if err != nil && i == 0 && cfg.IOBackend == BackendAuto {
			// No ring at all: io_uring is refused or missing.
			rt.backend = BackendPortable
			rt.fellBack(err)
			w, err = rt.newWorker(i)
		}
		if err != nil {
			for _, w := range rt.workers {
				w.io.Close()
			}
			return nil, err
		}
		rt.workers = append(rt.workers, w)
	}
	if cfg.StallThreshold > 0 {
		// Before the workers start: they read rt.watchdog when they
		// leave park.
		rt.watchdog = watchdog.Start((*watchedWorkers)(rt), cfg.StallThreshold)
	}
	if rt.backend == BackendPortable {
		// Tasks wait for sockets there (see RegisterFD): made now, so
		// that the first wait does not pay for it. Without it (it cannot
		// fail but for a lack of descriptors) package aio waits through
		// goroutines.
		_, _ = rt.fdPoller()
	}
	registerWorkers(rt.workers)
	for _, w := range rt.workers {
		rt.workerWG.Add(1)
		go func() {
			defer rt.workerWG.Done()
			w.loop()
		}()
	}
	return rt, nil
}

func (rt *Runtime) newWorker(id int) (*worker, error) {
	local, err := ringq.NewLocalQueue[*Task](rt.cfg.LocalQueueCapacity)
	if err != nil {
		return nil, err
	}
	wheel, err := timerwheel.NewShared[Waker](timerwheel.Config{Resolution: rt.cfg.TimerResolution})
	if err != nil {
		return nil, err
	}
	w := &worker{id: id, rt: rt, local: local, inbox: ringq.NewGlobalQueue[*Task](), wheel: wheel, stopped: make(chan struct{}), pinned: rt.cfg.PinnedWorkers}
	if w.pinned {
		w.placed = ringq.NewGlobalQueue[*Task]()
	}
	w.fireFn = w.fireTimer
	w.io, err = newEngine(w, rt.backend)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// usable reports whether rt was made by New: neither nil nor the zero
// Runtime, whose root New sets.
func (rt *Runtime) usable() bool { return rt != nil && rt.root != nil }

// Workers returns the number of workers (0 for a nil or zero Runtime).
func (rt *Runtime) Workers() int {
	if rt == nil {
		return 0
	}
	return len(rt.workers)
}

// now is the time on the workers' timer wheels: time since New.
func (rt *Runtime) now() time.Duration { return time.Since(rt.start) }

// wheelTime is the time on the workers' timer wheels of the instant
// deadline, read against now (time.Now()), saturated at math.MaxInt64.
//
// For a deadline with a monotonic clock reading it is deadline.Sub(rt.start),
// exactly. One without (from time.Unix, t.UTC(), t.Round(0), a decoded time)
// is a wall clock instant, and its distance to the wall reading of rt.start
// is off by every step of the wall clock since New (NTP, settimeofday, a
// suspend, which stops the monotonic clock only): an hour's step back woke
// SleepUntil an hour early. As package time and context do when they arm a
// timer (time.Until), the wall clock distance is taken from now.
func (rt *Runtime) wheelTime(deadline, now time.Time) time.Duration {
	elapsed, left := now.Sub(rt.start), deadline.Sub(now) // elapsed >= 0
	if left > math.MaxInt64-elapsed {
		return math.MaxInt64
	}
	return elapsed + left
}

// deadlineOnWheel is wheelTime for the deadline of a wait's context. One
// with a monotonic clock reading, as context.WithTimeout and WithDeadline
// give a deadline made from time.Now(), is placed exactly without reading
// the clock, which costs 100 ns and more on a virtual machine's kvm-clock;
// only a wall clock deadline needs now.
func (rt *Runtime) deadlineOnWheel(deadline time.Time) time.Duration {
	if deadline != deadline.Round(0) { // Round(0) strips the monotonic reading
		return deadline.Sub(rt.start)
	}
	return rt.wheelTime(deadline, time.Now())
}

// localWorker returns the worker whose loop or current coroutine the
// calling goroutine is, or nil.
func (rt *Runtime) localWorker() *worker {
	g := getg()
	for _, w := range rt.workers {
		if w.loopG.Load() == g {
			return w
		}
		// current may still name a coroutine that another worker has
		// resumed since: only the one its task names runs it now (we
		// are that coroutine, so its task fields are ours to read).
		if c := w.current.Load(); c != nil && c.goid.Load() == g && c.task != nil && c.task.worker == w {
			return w
		}
	}
	return nil
}

// enqueue makes t runnable from any goroutine. Woken by a task of this
// runtime (or a worker loop), it runs next on the waker's worker; woken from
// elsewhere, it goes to the inbox of the worker it last ran on, which is
// woken if asleep; if that worker is awake with woken tasks queued already,
// a sleeping worker is told too, so that tasks woken from outside (by the
// netpoller goroutines of the portable backend, say) spread over the
// workers as ring completions do (see drive).
//
// On pinned workers (Config.PinnedWorkers) a task that has started goes
// only to the worker that owns its coroutine.
func (rt *Runtime) enqueue(t *Task) {
	w := rt.localWorker()
	c := t.coro.Load()
	if w != nil && (!w.pinned || c == nil || c.owner == w) {
		w.pushWakeLocal(t)
		return
	}
	if w = t.worker; w.pinned && c != nil {
		w = c.owner
	}
	rt.wakeOn(w, t)
}

// placeOn queues t, a task spawned on another pinned worker, on w (see
// worker.spreadTarget), and wakes w if it sleeps.
func (rt *Runtime) placeOn(w *worker, t *Task) {
	t.worker = w
	w.load.Add(1)
	_ = w.placed.Push(t)
	// The same pairing with park as wakeOn's (hasWork checks placed).
	if w.parked.Load() {
		w.unpark()
	}
}

// wakeOn queues t, runnable, in w's inbox, and wakes w if it sleeps. If w
// is awake with woken tasks queued already, a sleeping worker is told too,
// so that they spread as ring completions do (see drive), unless the
// workers are pinned: a pinned worker's inbox is its own.
func (rt *Runtime) wakeOn(w *worker, t *Task) {
	_ = w.inbox.Push(t)
	// Dekker pairing with park: it stores parked and then checks the
	// inbox; we push and then load parked.
	if w.parked.Load() {
		w.unpark()
	} else if !w.pinned && w.inbox.Len() > 1 {
		rt.notifyOne()
	}
}

// submit queues a new task from outside the workers and wakes one. The
// global queue refuses only once Close has seen every task finish, and
// newTask refused new tasks long before that, so a refusal here would be a
// runtime bug: the task is finished with ErrClosed rather than lost.
func (rt *Runtime) submit(t *Task) {
	if err := rt.global.Push(t); err != nil {
		t.body.fail(ErrClosed)
		rt.finish(t, nil)
		return
	}
	rt.notifyOne()
}

// notifyOne wakes a sleeping worker if nobody is searching for work.
func (rt *Runtime) notifyOne() {
	if id, ok := rt.sm.WorkerToNotify(); ok {
		rt.workers[id].unpark()
	}
}

// Test hooks, nil outside tests: testHookRootKid runs in newTask before a
// task is counted on the runtime's root, testHookCloseIdle in Close once
// the root is idle, before the global queue closes.
var testHookRootKid, testHookCloseIdle func()

// testHookStart, nil outside tests, replaces the start instant New reads,
// so that a test can give it a wall clock reading that differs from now's
// by more than the monotonic clock has run: what a step of the wall clock
// since New looks like.
var testHookStart func(time.Time) time.Time

// newTask prepares t to run body as a child of parent (the spawning task, or
// the runtime's root) with ctx as its context parent; w is the worker of
// parent when parent itself spawns, on its coroutine (Spawn), and nil
// otherwise. It reports false when the runtime is closing.
func (rt *Runtime) newTask(t *Task, body taskBody, parent *Task, ctx context.Context, w *worker) bool {
	if rt.closing.Load() {
		return false
	}
	t.rt = rt
	t.body = body
	t.treeParent = parent
	if w != nil {
		// Spawned by parent itself, on its coroutine (Spawn).
		parent.addOwnKid()
	} else if parent == rt.root || !parent.addKidIfLive() {
		// The root never leaves the tree: a plain add. Another parent
		// may have finished and left it, with everything under it (its
		// context outlived it): the task then starts at the top level,
		// as SpawnOn's do, and keeps ctx as its context parent.
		parent = rt.root
		t.treeParent = parent
		if testHookRootKid != nil {
			testHookRootKid()
		}
		parent.kids.Add(1)
		// Counted, then checked, where Close stores closing, then reads
		// the count: either Close waits for t, or t sees closing here.
		// Checked only before counting, a task counted after Close had
		// found the root idle was queued after the workers' last look.
		if rt.closing.Load() {
			parent.release(1)
			return false
		}
	}
	// t is not shared yet: its ext needs no lock here, and what newTask
	// puts there stays (readers rely on the flags, stored before the
	// task is published).
	var flags uint32
	external := ctx != context.Context(parent)
	if external {
		flags = flagExternal
		if ctx != context.Background() {
			flags |= flagParentExt
			t.extLocked().parent = ctx
		}
	}
	if l := getProfLabel(); l != nil {
		flags |= flagLabels
		t.extLocked().labels = l
	}
	if flags != 0 {
		// An atomic store is a full barrier on amd64: not for the
		// usual spawn, whose fresh task's flags are zero already.
		t.flags.Store(flags)
	}
	// A task with children must be in the tree, so that cancelling its
	// ancestors reaches them.
	parent.link()
	if external && ctx.Done() != nil {
		t.link()
		stop := context.AfterFunc(ctx, func() { t.cancel(ctx.Err()) })
		t.mu.Lock()
		t.extLocked().stopExt = stop
		t.mu.Unlock()
	}
	return true
}

// finish retires a task whose function returned (or never ran): its result
// is published and it leaves the tree. w is the worker that ran it, or nil.
func (rt *Runtime) finish(t *Task, w *worker) {
	if err := t.body.failure(); err != nil {
		rt.noteFailure(t, err)
	}
	t.complete()
	t.finishTree(w)
	if w != nil {
		w.counts.completed++
	} else {
		rt.completedOutside.Add(1)
	}
}

// endForeignWaits ends, for Close, every wait on a cancellable context
// that derives from no task of the runtime (stCloseEnds): cancelling the
// tasks ends only the waits on contexts derived from tasks.
// Every waiting task is in the tree (Task.link), which it walks; a wait
// published while it walks sees closing itself (completeSuspend).
func (rt *Runtime) endForeignWaits() {
	stack := []*Task{rt.root}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		t.mu.Lock()
		for c := t.children; c != nil; c = c.next {
			stack = append(stack, c)
		}
		t.mu.Unlock()
		if s := t.wstate.Load(); s&stCloseEnds != 0 && s&stMask == stWaiting {
			t.cancelWait(s >> genShift)
		}
	}
}

func (rt *Runtime) signalIdle() {
	rt.idleMu.Lock()
	if rt.idle != nil {
		select {
		case <-rt.idle:
		default:
			close(rt.idle)
		}
	}
	rt.idleMu.Unlock()
}

// Close stops the runtime: new spawns fail with ErrClosed, every remaining
// task is cancelled and waited for, the workers stop and their rings and
// eventfds are closed. It is idempotent; called from a task, of this
// runtime or of another, it returns ErrOnWorker and does nothing.
//
// Tasks are cancelled, not killed: a task that ignores its context and
// blocks in plain Go code holds Close until it returns. A faio wait on a
// context that can be cancelled but derives from no task of the runtime
// (the Accept of a net.Listener adapter, which runs on the adapter's own
// context) fails with ErrClosed: those in progress when Close begins end,
// and later ones fail at once (a loop of them, such as
// http.Server.Serve's Accepts, would hold Close otherwise). Waits on a
// context that can never be cancelled (context.Background(),
// context.WithoutCancel), which say that the wait must complete, run as
// usual, such as a deferred Close of a connection. A readiness wait
// (FD.Wait) ends with ErrFDClosed instead, whatever its context: the
// poller it waits in closes with the runtime.
//
// If the readiness poller (see RegisterFD) found its epoll descriptor
// closed or replaced behind its back, Close leaves that number alone and,
// with everything else done, returns the *PollerError.
//
// On a nil or zero Runtime (not made by New) Close returns ErrNilRuntime.
func (rt *Runtime) Close() error {
	if !rt.usable() {
		return ErrNilRuntime
	}
	if onCoroutine() {
		return ErrOnWorker
	}
	rt.closeOnce.Do(func() {
		rt.idleMu.Lock()
		rt.idle = make(chan struct{})
		rt.idleMu.Unlock()
		rt.closing.Store(true)
		rt.root.cancel(context.Canceled)
		rt.endForeignWaits()
		if rt.root.kids.Load() == 0 {
			rt.signalIdle()
		}
		<-rt.idle
		if testHookCloseIdle != nil {
			testHookCloseIdle()
		}
		rt.global.Close()
		rt.shutdown.Store(true)
		for _, w := range rt.workers {
			w.parked.Store(false)
			w.io.Wake()
		}
		rt.workerWG.Wait()
		if rt.watchdog != nil {
			rt.watchdog.Stop()
		}
		// Stopping a coroutine switches to it, which Go refuses from a
		// goroutine locked to its thread (a cgo export, LockOSThread):
		// stop them from a fresh goroutine.
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			var retired []*coro
			for _, w := range rt.workers {
				for _, c := range w.coros {
					c.stop()
				}
				if !w.pinned {
					// Coroutines of tasks that called Goexit in a
					// nested run (RunNext); last, since stopping
					// one ends this goroutine (stopRetired).
					retired = append(retired, w.retired...)
					w.retired = nil
				}
			}
			stopRetired(retired)
		}()
		<-stopped
		unregisterWorkers(rt)
		// A poller being made now (at a RegisterFD racing Close) is
		// finished first, and none is made from now on.
		rt.fdp.once.Do(func() { rt.fdp.err = ErrClosed })
		if p := rt.fdp.p; p != nil {
			// A poller that lost its epoll descriptor (a *PollerError)
			// is reported here too, as it leaves the number alone.
			rt.closeErr = p.close()
		}
		for _, w := range rt.workers {
			w.coros = nil
			w.io.Quiesce()
			w.io.Close()
		}
	})
	// Every task has ended: what failed unjoined is reported now, outside
	// closeOnce, so that a hook that calls Close does not re-enter it.
	rt.reportUnobserved(0, true)
	return rt.closeErr
}

// reportIOError counts a passing io_uring_enter failure (see enterFailed);
// the worker carries on and the next enter retries.
func (rt *Runtime) reportIOError(error) {
	rt.ioErrors.Add(1)
}
