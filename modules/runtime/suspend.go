package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// The suspension state machine.
//
// A task's suspensions are numbered: suspension g follows the one whose
// number the word holds (nextGen; the task and its worker both derive it
// before the worker publishes g), and everything that may end suspension gen carries that
// number (a Waker, a timer entry, the AfterFunc of the wait's context, the
// in-flight record of an I/O, a cancel request). The state of the current
// suspension is one word, Task.wstate = gen<<genShift | flags | state, and
// whoever ends a suspension does so with a compare-and-swap of the whole
// word, gen included.
//
// States, s&stMask:
//
//	stIdle       no suspension: the task runs (or is queued after a spawn or
//	             a yield), or has switched away and its worker has not yet
//	             published the wait
//	stWaiting    published: the only state a waker, a canceller or the
//	             completion may leave
//	stWoken      ended well: Wake, a Sleep's timer, an I/O completion, or
//	             register (registerJoiner) returning false; the task is
//	             queued or about to be, and stores stIdle when it runs
//	stCancelled  ended by cancellation (for an I/O: completed after one);
//	             likewise
//
// Flags, set by the worker when it publishes the wait (stIOCancel later):
//
//	stSelfCancel   ctx is the task itself: Task.cancel calls cancelWait (a
//	               derived context does it through its AfterFunc)
//	stIO           an I/O wait (Submit): only its completion ends it
//	stIOCancel     a cancellation of the I/O wait was requested; set once
//	stRegistering  the worker is running register or registerJoiner
//	stCloseEnds    ctx has a Done channel and derives from no task of the
//	               runtime (such a wait does not begin once Close has):
//	               Close's endForeignWaits calls cancelWait
//
// Transitions of suspension g (W stands for stWaiting, R for
// stRegistering; claim writes g|to and keeps only R of the flags):
//
//	from                  to                    by
//	(g-1)|Idle            g|W|flags             worker: completeSuspend publishes
//	                                            the wait (Store)
//	g|W[|R]               g|Woken[|R]           waker: Wake (claim); the wheel: a
//	                                            Sleep's entry (claim); worker:
//	                                            registerJoiner false (claim)
//	g|W[|R], not IO       g|Cancelled[|R]       canceller: cancelWait (claim), from
//	                                            Task.cancel, the context's
//	                                            AfterFunc or the deadline entry
//	g|W|IO                g|W|IO|IOCancel       canceller: cancelWait (CAS), then
//	                                            requestCancel (ASYNC_CANCEL)
//	g|W|IO[|IOCancel]     g|Woken, g|Cancelled  I/O completion: ioDone (claim),
//	                                            Cancelled iff it saw stIOCancel
//	g|W|R, g|Cancelled|R  g|Woken|R             worker: forceWoken, register
//	                                            returned false
//	g|x|R                 g|x                   worker: endRegistering (CAS); it
//	                                            queues the task iff x is not W
//	g|Woken, g|Cancelled  g|Idle                task: suspend, having read the
//	                                            outcome (Store)
//
// Exactly one party ends each suspension, and the task runs only after it
// has:
//
//   - Every party but the task and its worker only leaves g|W, by a CAS
//     with its own gen: a holder of an earlier gen (a Waker left in a wait
//     list, a timer entry that fires late, an AfterFunc still running, a
//     late cancel request) fails the comparison and writes nothing; a late
//     completion is caught earlier by its record's own generation (package
//     driver's OpID). Within a
//     gen the word never returns to an earlier value and gens are not
//     reused (57 bits), so there is no ABA: a CAS that succeeds proves that
//     the word, and so the task, did not move since the load it was based
//     on.
//   - The winner of claim queues the task. The queue (inbox mutex, LIFO
//     slot, run queue) orders the winner's writes, with the claim itself,
//     before the worker that pops the task and resumes it, and so before
//     the task's load of the outcome: ioDone stores the result before
//     its claim for this reason.
//   - The task's writes (the coroutine's suspension fields) reach
//     the worker through the coroutine switch. The publication Store orders
//     everything the worker did for the wait (the operation started, its
//     coroutine's ioWorker and ioID in startIO, the timer entries) before any party that loads g|W; the
//     worker reads the suspension's fields before it, since from that Store
//     on the task may run elsewhere.
//   - A cancellation that comes before the publication finds gen-1 and
//     does nothing; the worker's check of ctx.Err() after its Store catches
//     it (Dekker: Task.cancel sets flagCancelled, then loads wstate for
//     stSelfCancel; a derived context sets its error, then runs the
//     AfterFunc; the worker stores wstate, then loads the error).
//   - stRegistering defers the queueing to the worker: a claim that lands
//     while register runs wins the outcome but reports deferred and queues
//     nothing; endRegistering clears R by CAS and queues the task iff the
//     wait has ended. The two CASes are ordered, so exactly one of the
//     claimer (which saw R clear) and endRegistering (which saw the end)
//     queues it, and never while register still runs. Only waits with a
//     register (kindRegister, kindJoin) set R; the wheel's and ioDone's
//     claims ignore deferred, which is always false for theirs.
//   - An I/O wait ends only by its completion, so the task gets its buffers
//     back only once the kernel is done with them. No Waker of an I/O wait
//     reaches claim (its only one is the deadline entry, which cancels);
//     cancelWait turns a cancellation into stIOCancel, once, and a request
//     to the ring's worker (the coroutine's ioWorker and ioID, loaded
//     before the CAS and still valid since the CAS succeeded), handed over under the
//     ring's lock; that worker submits ASYNC_CANCEL and later reaps the
//     completion it causes (or a peer does, for a stuck worker: the
//     cancel lock and then the ring's order the request before that
//     reap), so ioDone sees stIOCancel and ends the wait Cancelled. A cancellation landing after
//     ioDone's load loses, and the wait ends Woken with the real result.
//   - register returning false beats a cancellation landing inside
//     register: the primitive may have handed the task a resource under its
//     lock, so the wait must succeed. forceWoken, run by the worker while R
//     is still set, rewrites g|Cancelled|R to g|Woken|R. That is safe
//     because the cancellation's win is not observable yet: cancelWait
//     reports nothing and has queued nothing. A Wake's win (it returned
//     true to someone) is never rewritten. kindJoin hands nothing over and
//     uses plain claim, so there a cancellation may win.
//
// A plain goroutine's Suspend (parker) uses the same gen|state word
// without flags: it runs register itself and blocks on a channel.
const (
	stIdle      = 0 // not suspended
	stWaiting   = 1 // published; Wake or cancellation may end it
	stWoken     = 2 // ended by Wake (or a completion): the wait succeeded
	stCancelled = 3 // ended by cancellation: the wait failed
	stMask      = 3
	// stSelfCancel marks a suspension whose context is the task itself, so
	// the task's own cancel must resume it (a derived context does so
	// through its AfterFunc).
	stSelfCancel = 4
	// stIO marks an I/O wait: only its completion may end it, so a
	// cancellation sets stIOCancel and asks the worker for ASYNC_CANCEL
	// instead of resuming the task.
	stIO       = 8
	stIOCancel = 16
	// stRegistering is set while the worker runs the wait's register
	// function: a Wake or cancellation that ends the wait meanwhile is
	// recorded, but the task is queued by the worker once register has
	// returned, so a task never runs while its register still does.
	stRegistering = 32
	// stCloseEnds marks a wait whose context can be cancelled but derives
	// from no task of the runtime: Close ends it (endForeignWaits), as the
	// tasks' cancellation ends the waits on contexts derived from them.
	stCloseEnds = 64
	genShift    = 7
)

// Reasons a coroutine switches back to its worker.
const (
	reasonDone = iota
	reasonYield
	reasonSuspend
	reasonFinished // the task finished and runInline already completed it
	reasonRetired  // the task called runtime.Goexit on a pinned worker (coro.retire)
	reasonPause    // the task lets its worker's loop do its periodic work, then runs on (chargeSpawn)
	reasonBehind   // a pinned worker's spawner waits behind its children (chargeSpawn, worker.behind)
)

// Kinds of suspension the worker completes on its own side.
const (
	kindRegister = iota // call the register function given to Suspend
	kindSleep           // insert into the worker's timer wheel
	kindJoin            // wait for joinTarget to complete
	kindIO              // an io_uring operation (Submit)
)

// Waker resumes one suspended waiter, once. It is the handle a primitive
// keeps in its wait list: the register function given to Suspend receives
// it, and whoever satisfies the wait calls Wake. A Waker is a small value;
// copy it freely. The zero Waker wakes nothing.
//
// Each Waker belongs to one suspension: after that suspension ended (woken,
// cancelled or timed out) Wake returns false, even if the same task or
// goroutine is suspended again, so a stale Waker left in a wait list is
// harmless.
type Waker struct {
	// to is the waiter: a *Task, or a *parker when gen has wakeParker. One
	// word for either keeps a Waker at two words, in every wait list, timer
	// entry and task (Task.joiner).
	to  unsafe.Pointer
	gen uint64 // the suspension's number, with the wake flags below
}

// Flags in the top bits of Waker.gen, above every suspension number (gens
// have 64-genShift bits).
const (
	// wakeParker marks a plain goroutine's Waker: to is a *parker.
	wakeParker = 1 << 63
	// wakeDeadline marks the timer-wheel entry that enforces the deadline
	// of the wait's context: firing it cancels the wait.
	wakeDeadline = 1 << 62
	wakeGenMask  = wakeDeadline - 1
)

// taskWaker returns the Waker of suspension gen of t.
func taskWaker(t *Task, gen uint64) Waker { return Waker{to: unsafe.Pointer(t), gen: gen} }

// task returns the task w wakes, nil for a plain goroutine's or the zero
// Waker.
func (w Waker) task() *Task {
	if w.gen&wakeParker != 0 {
		return nil
	}
	return (*Task)(w.to)
}

// stale reports whether w's wait is over for good, so that a list may drop
// w: its waiter ended that suspension (woken, cancelled, or resumed) or
// has moved on to a later one. A false answer promises nothing: the wait
// may end at any moment.
func (w Waker) stale() bool {
	var st uint64
	switch {
	case w.to == nil:
		return true
	case w.gen&wakeParker != 0:
		st = (*parker)(w.to).state.Load()
	default:
		st = (*Task)(w.to).wstate.Load()
	}
	return st>>genShift != w.gen&wakeGenMask || st&stMask != stWaiting
}

// Ended reports whether the suspension w belongs to is over: its waiter
// was woken, its context was cancelled, or it has moved on to a later
// wait. A false answer promises nothing: the wait may end at any moment.
//
// A primitive whose waiters can only be woken by whoever claims them (under
// the primitive's lock) learns from Ended that a waiter still queued was
// cancelled, and can drop it instead of handing it a resource its owner
// has stopped waiting for: on a busy worker the owner may not run for a
// long time after its deadline.
func (w Waker) Ended() bool { return w.stale() }

// Wake resumes the waiter and reports whether this call did so. It returns
// false when the waiter was already resumed, by an earlier Wake or because
// its context was cancelled: a primitive handing over a resource (a lock, a
// channel item) must then hand it to the next waiter instead. When Wake
// returns true the waiter's Suspend returns nil, whatever happens to its
// context afterwards.
//
// Wake may be called from any goroutine, task or not, and never blocks.
func (w Waker) Wake() bool {
	switch {
	case w.to == nil:
		return false
	case w.gen&wakeParker != 0:
		return (*parker)(w.to).wake(w.gen & wakeGenMask)
	}
	return (*Task)(w.to).wake(w.gen & wakeGenMask)
}

// Suspend waits until a Waker is woken or ctx is cancelled.
//
// Called from a task (ctx is the task's context or derives from it) it
// switches the task's coroutine away first, and only then, on the worker,
// calls register with the Waker of this wait: so the Waker can never resume
// a task that is still running (the rule of C++20's await_suspend). register
// publishes the Waker where the waker will find it (a wait list) and
// returns true; or, when it finds under its lock that the condition already
// holds, publishes nothing and returns false, and Suspend returns nil at
// once. register runs on a worker: it must be short and must not block or
// suspend.
//
// Called from a plain goroutine (ctx carries no task) Suspend calls
// register on the calling goroutine and blocks it until the Waker is woken
// or ctx is done.
//
// The task is not resumed before register has returned, even when the wait
// ends (by Wake or cancellation) while register still runs; if ctx is
// already cancelled when the worker gets to it, register is not called at
// all.
//
// Suspend returns nil when the Waker was woken (or register returned false)
// and ctx.Err() when ctx was cancelled first; the Waker's Wake then returns
// false, so the primitive can skip it. A cancelled waiter's Waker may stay in
// the primitive's list; primitives drop such entries when they meet them.
//
// A nil ctx is refused with ErrNilContext, and a nil register with
// ErrNilFunc; nothing waits.
func Suspend(ctx context.Context, register func(Waker) bool) error {
	if ctx == nil {
		return ErrNilContext
	}
	if register == nil {
		return ErrNilFunc
	}
	if t := taskFor(ctx); t != nil {
		c := t.coro.Load()
		c.kind, c.register = kindRegister, register
		return t.suspend(ctx)
	}
	return parkGoroutine(ctx, register)
}

// taskFor returns the task the calling goroutine runs, or nil for a plain
// goroutine. Usually ctx is that task's context or derives from it; but a
// task may also pass another context (context.Background() in a deferred
// Close, a context of another task): it is still the task that waits, with
// ctx as the cancellation source, rather than a blocked worker.
func taskFor(ctx context.Context) *Task {
	if t := Current(ctx).running(); t != nil {
		return t
	}
	if c := coroOf(getg()); c != nil {
		// We are this coroutine, so its task field is ours to read.
		return c.task
	}
	return nil
}

// suspend switches the task's coroutine back to its worker, which completes
// the suspension described by t's coroutine's kind, and returns once the task is
// resumed.
func (t *Task) suspend(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// A suspended task must be reachable by its parent's cancellation.
	t.link()
	c := t.coro.Load()
	gen := t.nextGen()
	var stop func() bool
	closeEnds := false
	if ctx != context.Context(t) && ctx.Done() != nil {
		// A context that can be cancelled, but that Close's
		// cancellation of the tasks does not reach (it derives from no
		// task of this runtime): Close ends the wait too, and once
		// Close has begun such a wait does not begin (a loop of them,
		// such as http.Server.Serve's Accepts, would hold Close for
		// ever). One that derives from a task ends with that task's
		// cancellation, with the context's own error. One that never
		// can be cancelled (Background, WithoutCancel) says the wait
		// must complete, as the blocking pool's does while a system
		// call uses the caller's buffer.
		if closeMisses(t, ctx) {
			if t.rt.closing.Load() {
				return ErrClosed
			}
			closeEnds = true
		}
		stop = context.AfterFunc(ctx, func() { t.cancelWait(gen) })
	}
	c.closeEnds = closeEnds
	c.suspendCtx = ctx
	c.yieldReason = reasonSuspend
	c.yield(struct{}{})
	// Resumed, possibly on another worker: t's coroutine is still c.
	c.suspendCtx = nil
	c.register = nil
	c.joinTarget = nil
	if stop != nil {
		stop()
	}
	if c.timerWorker != nil {
		// Resumed before the timer fired (woken, or cancelled): drop it.
		// (Possibly another worker's wheel: long deadlines must not
		// pile up stale entries there.)
		c.timerWorker.wheel.Cancel(c.timer)
		c.timerWorker = nil
	}
	s := t.wstate.Load()
	t.wstate.Store(gen<<genShift | stIdle)
	if s&stMask == stCancelled {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The wheel enforced the deadline before the context's own
		// timer fired.
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			t.awaitDeadline(ctx)
			if err := ctx.Err(); err != nil {
				return err
			}
			return context.DeadlineExceeded
		}
		if closeEnds && t.rt.closing.Load() {
			// Neither ctx nor its deadline: Close ended the wait.
			return ErrClosed
		}
		return context.Canceled
	}
	return nil
}

// closeMisses reports whether Close's cancellation of the tasks misses ctx,
// a context of task t other than its own: ctx derives from no task of t's
// runtime.
func closeMisses(t *Task, ctx context.Context) bool {
	o := Current(ctx)
	return o == nil || o.rt != t.rt
}

// deadlineGrace bounds awaitDeadline's wait: the timer of a context past
// its deadline is due, and a Context whose Done never closes is broken.
const deadlineGrace = time.Second

// awaitDeadline waits, suspended, until ctx, whose deadline has passed
// but whose Err is still nil, reports it (or for deadlineGrace at most).
// The worker's wheel often ends a wait at its context's deadline before
// the Go timer behind the context fires, and a caller that then asks
// ctx.Err() to tell a timeout from another end (Receiver.All's doc tells
// it to) must not hear nil: a reviewer saw nil after about half of such
// waits.
func (t *Task) awaitDeadline(ctx context.Context) {
	done := ctx.Done()
	if done == nil {
		return
	}
	// A context with neither a deadline (this wait must not come back
	// here) nor t's cancellation: the wait ends when ctx reports, or
	// after the grace.
	var stop func() bool
	var grace *time.Timer
	_ = Suspend(context.WithoutCancel(context.Context(t)), func(wk Waker) bool {
		select {
		case <-done:
			return false
		default:
		}
		stop = context.AfterFunc(ctx, func() { wk.Wake() })
		grace = time.AfterFunc(deadlineGrace, func() { wk.Wake() })
		return true
	})
	if stop != nil {
		stop()
		grace.Stop()
	}
}

// testHookStartedIO, when set, runs in completeSuspend between the start
// of an I/O and the publication of its wait: a test widens that window.
var testHookStartedIO func()

// completeSuspend runs on worker w right after t switched away to suspend:
// it publishes the wait and lets register, the timer wheel or the joined
// task hold the Waker.
func (w *worker) completeSuspend(t *Task) {
	// Read everything before publishing the wait: from that store on, a
	// cancellation may resume the task on another worker, which then owns
	// it and its coroutine.
	c := t.coro.Load()
	gen, kind, ctx := t.nextGen(), c.kind, c.suspendCtx
	register, target := c.register, c.joinTarget
	st := uint64(stWaiting)
	if ctx == context.Context(t) {
		st |= stSelfCancel
	}
	closeEnds := c.closeEnds
	if closeEnds {
		st |= stCloseEnds
	}
	// A wheel entry must not fire before the wait is published: the
	// wheel's lock keeps peers from firing it until then.
	locked := false
	// The deadline of the wait's context on the wheel (see wheelTime).
	dl, hasDeadline := ctx.Deadline()
	var dlAt time.Duration
	if hasDeadline {
		dlAt = w.rt.deadlineOnWheel(dl)
	}
	switch kind {
	case kindSleep:
		at, wk := c.sleepUntil, taskWaker(t, gen)
		if hasDeadline && dlAt < at {
			at, wk.gen = dlAt, gen|wakeDeadline
		}
		w.wheel.Lock()
		locked = true
		w.armTimer(c, at, wk)
	case kindIO:
		// Likewise the ring stays held until the wait is published: a
		// peer may reap it (reapStuckPeers).
		w.startIO(t, gen)
		if testHookStartedIO != nil {
			testHookStartedIO()
		}
		st |= stIO
	}
	if kind != kindSleep {
		// The deadline of the wait's context is enforced on this
		// worker's wheel, not by the Go timer behind the context.
		if hasDeadline {
			w.wheel.Lock()
			locked = true
			w.armTimer(c, dlAt, taskWaker(t, gen|wakeDeadline))
		}
	}
	registering := kind == kindRegister || kind == kindJoin
	if registering {
		st |= stRegistering
	}
	t.wstate.Store(gen<<genShift | st)
	if locked {
		w.wheel.Unlock()
	}
	if kind == kindIO {
		w.io.Unhold()
	}
	// Dekker pairing with cancel: it stores the error and then loads
	// wstate; we store wstate and then load the error. One of us sees the
	// other, so a cancellation is never missed. Likewise with Close, which
	// stores closing and then looks at every task's wstate.
	if ctx.Err() != nil || closeEnds && w.rt.closing.Load() {
		t.cancelWait(gen)
	} else {
		wk := taskWaker(t, gen)
		switch kind {
		case kindRegister:
			if !register(wk) {
				// The condition held: the primitive may have handed the
				// task a resource, so the wait succeeds even if a
				// cancellation claimed it meanwhile (it could only be
				// recorded: we hold stRegistering).
				t.forceWoken(gen)
			}
		case kindJoin:
			if !target.registerJoiner(wk) {
				t.claim(gen, stWoken)
			}
		}
	}
	if registering {
		w.endRegistering(t, gen)
	}
}

// nextGen is the number of the task's next suspension, called by the task
// as it suspends and by its worker before it publishes the wait: until then
// the word still holds the last suspension's number, and nobody else may
// change it (every other party only leaves a published wait).
func (t *Task) nextGen() uint64 { return t.wstate.Load()>>genShift + 1 }

// wake resumes suspension gen if it is still waiting; the task goes to the
// inbox of the worker it suspended on.
func (t *Task) wake(gen uint64) bool {
	won, deferred := t.claim(gen, stWoken)
	if won && !deferred {
		t.rt.enqueue(t)
	}
	return won
}

// claim ends suspension gen with state to (stWoken or stCancelled) if it is
// still waiting. Exactly one claim per suspension wins; the winner queues
// the task, unless deferred reports that the worker is still running the
// wait's register function and will queue it when that returns.
func (t *Task) claim(gen uint64, to uint64) (won, deferred bool) {
	for {
		s := t.wstate.Load()
		if s>>genShift != gen || s&stMask != stWaiting {
			return false, false
		}
		reg := s & stRegistering
		if t.wstate.CompareAndSwap(s, gen<<genShift|to|reg) {
			return true, reg != 0
		}
	}
}

// forceWoken ends suspension gen as woken, overriding a cancellation that
// claimed it while the worker ran register. Only the worker may call it,
// while stRegistering is set: until that bit is cleared nobody has queued
// the task, so the outcome can still change.
func (t *Task) forceWoken(gen uint64) {
	for {
		s := t.wstate.Load()
		if s>>genShift != gen || s&stMask == stWoken {
			return
		}
		if t.wstate.CompareAndSwap(s, gen<<genShift|stWoken|stRegistering) {
			return
		}
	}
}

// endRegistering clears stRegistering after the register function of
// suspension gen returned, and queues the task if the wait ended meanwhile.
func (w *worker) endRegistering(t *Task, gen uint64) {
	for {
		s := t.wstate.Load()
		if t.wstate.CompareAndSwap(s, s&^stRegistering) {
			if s>>genShift == gen && s&stMask != stWaiting {
				w.pushWoken(t)
			}
			return
		}
	}
}

// parker blocks a plain goroutine in Suspend. Parkers are pooled; the
// generation in state makes a Waker of an earlier wait powerless.
type parker struct {
	state atomic.Uint64 // gen<<genShift | st
	ch    chan struct{}
}

var parkers = sync.Pool{New: func() any { return &parker{ch: make(chan struct{}, 1)} }}

func (p *parker) wake(gen uint64) bool {
	if p.state.CompareAndSwap(gen<<genShift|stWaiting, gen<<genShift|stWoken) {
		p.ch <- struct{}{}
		if w := callerWorker(); w != nil {
			w.yieldOwed = true
		}
		return true
	}
	return false
}

// callerWorker returns the worker whose goroutine calls: its loop, or the
// coroutine of the task it runs; nil for any other goroutine.
//
// A goroutine woken by a worker goes to the worker's P, next in line
// (Go's runnext), and waits there for the P: while the worker has tasks
// to run it keeps the P, and the goroutine waits until Go preempts it
// (about 10 ms, as long as every other P is busy too). So a worker that
// woke a goroutine owes it the P: it yields it once (yieldOwed, paid by
// the loop) after the running task switches back. Measured with a plain
// goroutine ping-ponging with a task through rendezvous channels while
// other tasks kept the worker busy: 21 ms per round trip, 188 ms at
// worst, at GOMAXPROCS 1 (TestGoroutineWokenByABusyWorkerRunsSoon).
func callerWorker() *worker {
	g := getg()
	ws := allWorkers.list.Load()
	if ws == nil {
		return nil
	}
	for _, w := range *ws {
		if w.loopG.Load() == g {
			return w
		}
	}
	if c := coroOf(g); c != nil {
		// We are this coroutine: its task, and the task's worker, are
		// ours to read.
		if t := c.task; t != nil {
			return t.worker
		}
	}
	return nil
}

func parkGoroutine(ctx context.Context, register func(Waker) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := parkers.Get().(*parker)
	gen := p.state.Load()>>genShift + 1
	p.state.Store(gen<<genShift | stWaiting)
	if !register(Waker{to: unsafe.Pointer(p), gen: gen | wakeParker}) {
		if p.state.CompareAndSwap(gen<<genShift|stWaiting, gen<<genShift|stIdle) {
			parkers.Put(p)
			return nil
		}
		// Woken during register: consume the signal below.
		<-p.ch
		parkers.Put(p)
		return nil
	}
	select {
	case <-p.ch:
		parkers.Put(p)
		return nil
	case <-ctx.Done():
	}
	if p.state.CompareAndSwap(gen<<genShift|stWaiting, gen<<genShift|stCancelled) {
		parkers.Put(p)
		return ctx.Err()
	}
	// A Wake won the race: the wait succeeded.
	<-p.ch
	parkers.Put(p)
	return nil
}

// RunNext lets the task of ctx, about to wait, run the task its worker
// would run next, now and on its own goroutine, and reports whether it did:
// the caller should then try its operation again before it suspends.
//
// A task that wakes another and then waits (a request and its reply over
// a channel, a lock handed on) would otherwise switch back to its worker's
// loop, which switches to the woken task; when that one waits in turn, the
// loop switches to the next. RunNext switches straight to the woken task
// (the one in the worker's LIFO slot, which the loop would have chosen),
// and its wait switches straight back: two coroutine switches and no turn
// of the loop per hand-off instead of four switches and two turns. If the
// woken task provided what the caller waits for, the caller goes on
// without suspending at all. The channels of package channel call it
// before they suspend; W2 (ping-pong over two channels) went from 500 to
// 310 ns per round trip with it.
//
// It does nothing and reports false when ctx is not the calling task's (a
// plain goroutine), on pinned workers (Config.PinnedWorkers), inside a run
// it started (one level only), when no task waits in the LIFO slot, and
// after 16 such runs since the worker's loop last chose a task, so that
// the loop's own work (its ring, timers, queues) is not held off by two
// tasks that keep handing work to each other. The task run this way runs
// until it waits, yields, or ends; it may do anything a task does.
//
// The caller must hold no lock that the task run might need, from package
// sync or elsewhere (a sync.Mutex, a sync.Once's Do): that task would
// block on it for good, since the holder goes on only once it returns.
// The channels of package channel call RunNext with no lock of theirs
// held, so a task must not hold such a lock across a channel operation
// either (it should not across any faio wait, see Hazards in the package
// documentation).
func RunNext(ctx context.Context) bool {
	cur := Current(ctx).running()
	if cur == nil {
		return false
	}
	w := cur.worker
	if w.pinned || w.nested || w.nestedRuns >= maxNestedRuns || w.lifo.Load() == nil {
		return false
	}
	t := w.lifo.Swap(nil)
	if t == nil {
		return false
	}
	w.nestedRuns++
	w.nested = true
	ok := false
	defer func() {
		if !ok {
			// A panic out of the worker's part of the run (a
			// register function, or a task under PanicCrash): on the
			// loop it would end the process, and the caller's own
			// recover must not catch it.
			r := recover()
			go func() { panic(r) }()
			select {}
		}
	}()
	w.settle(t)
	w.runTask(t)
	w.nested = false
	// Back to the caller, as if the loop had chosen it.
	w.settle(cur)
	w.runningTask = cur
	w.current.Store(cur.coro.Load())
	ok = true
	return true
}

// maxNestedRuns bounds the RunNext runs between two of the loop's choices.
const maxNestedRuns = 16
