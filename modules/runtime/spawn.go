package runtime

import (
	"context"
	"errors"
)

// JoinHandle is the handle of a spawned task: Join waits for its result,
// Cancel cancels its context, Done reports completion to plain goroutines.
// The task and its handle are one allocation.
//
// Handles come from Spawn and SpawnOn. A nil *JoinHandle and the zero
// JoinHandle have no task: Join fails at once with ErrNilHandle, Done is
// closed, Cancel does nothing and ID is 0.
type JoinHandle[T any] struct {
	task Task
	val  T
	// out holds the task's function until the task runs it, then the
	// error the task ended with (nil for none). One slot for both keeps
	// a JoinHandle[struct{}] at 144 bytes (see TestTaskFitsItsSizeClass).
	out any
}

func (h *JoinHandle[T]) run(t *Task) {
	fn := h.out.(func(context.Context) (T, error))
	h.out = nil
	var err error
	h.val, err = fn(t)
	h.out = err
}

func (h *JoinHandle[T]) fail(err error) {
	var zero T
	h.val, h.out = zero, err
}

// err returns the error the task ended with; only once it has ended.
func (h *JoinHandle[T]) err() error {
	err, _ := h.out.(error)
	return err
}

// failed returns a handle that is already complete with err, for a task
// that could not be spawned.
func failed[T any](err error) *JoinHandle[T] {
	h := &JoinHandle[T]{out: err}
	h.task.flags.Store(flagCompleted | flagExternal | flagCancelled) // its context is Background
	h.task.ext = &taskExt{finishCh: closedChan, doneCh: closedChan}
	return h
}

// Join waits for the task to finish and returns its result. It returns
// ctx.Err() if ctx is cancelled first (the task keeps running), and a
// *PanicError if the task panicked. Join may be called any number of
// times, from tasks and plain goroutines. A nil ctx is refused with
// ErrNilContext, even once the task has finished: the result stays for
// the next Join. On a nil or zero handle Join returns ErrNilHandle at once,
// and a task that joins itself gets ErrSelfJoin at once. A Join of a task
// that has finished is charged to the calling task's cooperative budget,
// as any operation that completes at once (see Consume).
func (h *JoinHandle[T]) Join(ctx context.Context) (T, error) {
	if h.taskless() {
		var zero T
		return zero, ErrNilHandle
	}
	if ctx == nil {
		var zero T
		return zero, ErrNilContext
	}
	if !h.task.has(flagCompleted) {
		var err error
		if t := taskFor(ctx); t != nil {
			if t == &h.task {
				var zero T
				return zero, ErrSelfJoin
			}
			c := t.coro.Load()
			c.kind, c.joinTarget = kindJoin, &h.task
			err = t.suspend(ctx)
		} else {
			err = parkGoroutine(ctx, h.task.registerJoiner)
		}
		if err != nil {
			var zero T
			return zero, err
		}
	} else {
		// Finished already: charged as any operation that completes at
		// once, or a loop of such Joins held the worker (its error is
		// not Join's: the result is there).
		_ = Consume(ctx)
	}
	// Observed only by a Join that returns the result: one that gave up
	// on its ctx saw nothing, and the failure must still be reported.
	if !h.task.has(flagJoined) {
		h.task.flags.Or(flagJoined)
	}
	err := h.err()
	if err != nil {
		h.task.observed()
	}
	return h.val, err
}

// taskless reports whether h is nil or the zero JoinHandle: no task was
// spawned with it. newTask names the runtime before the handle is
// returned; a handle that failed to spawn has none but is completed.
func (h *JoinHandle[T]) taskless() bool {
	return h == nil || h.task.rt == nil && !h.task.has(flagCompleted)
}

// Cancel cancels the task's context. The task sees it at its next faio
// blocking call (which returns ctx.Err()) or when it checks ctx.Err(). Once
// Cancel returns, Err is non-nil for the task and for every task under it,
// also when another cancellation of the task is under way. On a nil or
// zero handle it does nothing.
func (h *JoinHandle[T]) Cancel() {
	if h.taskless() {
		return
	}
	h.task.cancel(context.Canceled)
}

// Done returns a channel closed once the task has finished; for a nil or
// zero handle, which has no task, a closed channel.
func (h *JoinHandle[T]) Done() <-chan struct{} {
	if h.taskless() {
		return closedChan
	}
	t := &h.task
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.extLocked()
	if e.finishCh == nil {
		// complete closes the channel it finds; after it (flagCompleted,
		// set under mu) there is nobody left to close a new one.
		if t.has(flagCompleted) {
			e.finishCh = closedChan
		} else {
			e.finishCh = make(chan struct{})
		}
	}
	return e.finishCh
}

// ID returns the task's id (0 for a task that could not be spawned, and
// for a nil or zero handle). Ids are given when first asked for (see
// Task.ID); to tell whether a spawn happened, Spawned is cheaper.
func (h *JoinHandle[T]) ID() uint64 {
	if h == nil {
		return 0
	}
	return h.task.ID()
}

// Spawned reports whether the handle's task was spawned: false when Spawn
// or SpawnOn could not start it (a nil context, no runtime, a closed
// runtime: Join returns which) and for a nil or zero handle.
func (h *JoinHandle[T]) Spawned() bool {
	return h != nil && h.task.rt != nil
}

// Spawn starts fn as a new task in the runtime of the task that ctx belongs
// to, with ctx as its parent context: cancelling ctx cancels the new task.
// Called by the task itself, the new task runs next on its worker (the
// LIFO slot, as in tokio; the task it displaces moves to the local queue and
// at most one sleeping worker is woken to steal it); from other goroutines
// it goes to the global queue. On pinned workers (Config.PinnedWorkers) the
// new task may start on a less loaded worker instead, and a displaced task
// that has started stays on its worker. Spawn never blocks, but like any
// operation that completes at once it charges the caller's coop budget
// (see Consume), so a task spawning in a loop yields to its children now
// and then, unless other workers keep taking them.
//
// The new task is a child of ctx's task in the task tree: a BlockOn above
// it waits for it. If ctx outlived its task, which has finished together
// with everything under it, the new task starts at the runtime's top level
// instead, as SpawnOn's do: only Close waits for it, and cancelling ctx
// still cancels it. context.WithoutCancel(ctx) does not take the task out
// of the tree: cancelling ctx's task still cancels it (SpawnOn starts a
// task outside every tree).
//
// ctx must be a task's context, or derive from one: from a plain
// goroutine, use SpawnOn. When ctx is nil, carries no faio task, or the
// runtime is closed, Spawn returns a handle whose Join fails with
// ErrNilContext, ErrNoRuntime or ErrClosed, and fn does not run; a nil fn
// gets ErrNilFunc. A
// context from WithRuntime names a runtime but no task: Join's error
// then says that, and errors.Is(err, ErrNoRuntime) holds for it.
func Spawn[T any](ctx context.Context, fn func(context.Context) (T, error)) *JoinHandle[T] {
	parent := Current(ctx)
	if parent == nil {
		switch {
		case ctx == nil:
			return failed[T](ErrNilContext)
		case RuntimeOf(ctx) != nil:
			return failed[T](errSpawnNoTask)
		}
		return failed[T](ErrNoRuntime)
	}
	if fn == nil {
		return failed[T](ErrNilFunc)
	}
	rt := parent.rt
	h := &JoinHandle[T]{out: fn}
	if cur := parent.running(); cur != nil {
		w := cur.worker
		if !rt.newTask(&h.task, h, parent, ctx, w) {
			return failed[T](ErrClosed)
		}
		h.task.worker = w
		w.counts.spawned++
		if w.pinned {
			if tw := w.spreadTarget(); tw != nil {
				// A task stays on the worker it starts on: start
				// it on the least loaded one (Config.PinnedWorkers).
				rt.placeOn(tw, &h.task)
				chargeSpawn(cur)
				return h
			}
			w.load.Add(1)
		}
		if prev := w.lifo.Swap(&h.task); prev != nil && w.pushRunnable(prev) {
			// The previous LIFO task joins the queue, where another
			// worker may steal it: wake one to do so.
			rt.notifyOne()
		}
		chargeSpawn(cur)
		return h
	}
	if !rt.newTask(&h.task, h, parent, ctx, nil) {
		return failed[T](ErrClosed)
	}
	rt.spawnedOutside.Add(1)
	rt.submit(&h.task)
	return h
}

// chargeSpawn charges a spawn to the spawning task's coop budget. A task
// spawning in a loop lets its children run on its worker every CoopBudget
// spawns, while their memory is still in cache, instead of queueing them
// all first: it yields behind them. But when other workers keep the queue
// short by taking the children (it has room for CoopBudget more, so the
// next CoopBudget spawns cannot overflow it into the global queue), and no
// woken task waits for this worker, it only pauses: its worker reaps its
// ring and fires its timers, and resumes it next. Yielding behind the
// queue there made the spawner wait for children that other workers would
// have run anyway: W1 (a million spawns at two workers) went from a median
// of 253-267 to 244-250 ns per task with the pause (three sets of 8-10
// alternating runs).
func chargeSpawn(cur *Task) {
	c := cur.coro.Load()
	if c.budget+1 < CoopBudget {
		c.budget++
		return
	}
	c.budget = 0
	c.yieldReason = reasonYield
	if w := cur.worker; w.pinned {
		// A task that yields on a pinned worker waits in mine, which the
		// worker serves in turn with its local queue: the spawner would
		// be back after two of its children, and the queue would fill
		// and overflow (a million spawns on one worker peaked at 307 MiB).
		// It waits behind them instead (worker.behind).
		if w.local.Len() > 0 {
			c.yieldReason = reasonBehind
		}
	} else if w.local.RemainingCap() > CoopBudget && w.inbox.Len() == 0 {
		c.yieldReason = reasonPause
	}
	// Not Yield, which returns at once in a cancelled task (until its
	// budget is spent): one that spawns on regardless (its children start
	// cancelled) must let them run all the same.
	c.yield(struct{}{})
}

// SpawnOn starts fn as a new task on rt from any goroutine: it goes to the
// global queue. The task is not part of any BlockOn; Close cancels it.
// When rt is nil or not made by New, or closed, SpawnOn returns a handle
// whose Join fails with ErrNilRuntime or ErrClosed, and fn does not run; a
// nil fn gets ErrNilFunc.
func SpawnOn[T any](rt *Runtime, fn func(context.Context) (T, error)) *JoinHandle[T] {
	if !rt.usable() {
		return failed[T](ErrNilRuntime)
	}
	if fn == nil {
		return failed[T](ErrNilFunc)
	}
	h := &JoinHandle[T]{out: fn}
	if !rt.newTask(&h.task, h, rt.root, context.Background(), nil) {
		return failed[T](ErrClosed)
	}
	rt.spawnedOutside.Add(1)
	rt.submit(&h.task)
	return h
}

// BlockOn runs fn as a root task on rt and returns its result once it and
// every task spawned under it (transitively) have finished: nothing started
// inside outlives the call. It blocks the calling goroutine, so it must not
// be called from a faio task (it returns ErrOnWorker there). If rt is
// closed, or closes while BlockOn waits, it returns ErrClosed; if fn then
// failed otherwise than by that cancellation (it panicked in its clean-up,
// say), with fn's error joined to it (errors.Join), since nothing else
// reports the failure of a root. A nil rt, or one not made by New (the zero
// Runtime), is refused with ErrNilRuntime, from tasks too, and fn does not
// run; a nil fn is refused with ErrNilFunc.
func BlockOn[T any](rt *Runtime, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if !rt.usable() {
		return zero, ErrNilRuntime
	}
	if onCoroutine() {
		return zero, ErrOnWorker
	}
	if fn == nil {
		return zero, ErrNilFunc
	}
	h, ok := startRoot(rt, fn)
	if !ok {
		return zero, ErrClosed
	}
	<-h.task.ext.onDetach
	rt.reportUnobserved(h.task.ID(), false)
	if rt.closing.Load() && errors.Is(h.task.Err(), context.Canceled) {
		return zero, closedErr(h)
	}
	return h.val, h.err()
}

// closedErr is what BlockOn and WaitAll return when rt closed under their
// roots: ErrClosed, joined with the roots' failures other than their
// cancellation. A root's result counts as observed (flagJoined), so a
// failure dropped here would be reported nowhere.
func closedErr[T any](roots ...*JoinHandle[T]) error {
	errs := []error{ErrClosed}
	for _, h := range roots {
		if err := h.err(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 1 {
		return ErrClosed
	}
	return errors.Join(errs...)
}

// startRoot spawns a BlockOn root: a task whose leaving the tree (closing
// ext.onDetach) means that it and everything under it finished.
func startRoot[T any](rt *Runtime, fn func(context.Context) (T, error)) (*JoinHandle[T], bool) {
	h := &JoinHandle[T]{out: fn}
	h.task.ext = &taskExt{onDetach: make(chan struct{})}
	if !rt.newTask(&h.task, h, rt.root, context.Background(), nil) {
		return nil, false
	}
	// The root's result is BlockOn's (or WaitAll's): it is observed.
	h.task.flags.Or(flagJoined | flagOnDetach)
	rt.spawnedOutside.Add(1)
	rt.submit(&h.task)
	return h, true
}

// WaitAll runs every fn as a root task on rt, concurrently, and returns
// their results in order once all of them and everything they spawned have
// finished. The error joins the tasks' errors (nil if none failed); it is
// ErrClosed if rt closed before all of them could start or while they ran,
// joined with the errors of those that failed otherwise than by the
// cancellation. A nil rt, or one not made by New, is refused with
// ErrNilRuntime, as by BlockOn; a nil function among fns with ErrNilFunc,
// before any of them starts.
func WaitAll[T any](rt *Runtime, fns ...func(context.Context) (T, error)) ([]T, error) {
	if !rt.usable() {
		return nil, ErrNilRuntime
	}
	if onCoroutine() {
		return nil, ErrOnWorker
	}
	for _, fn := range fns {
		if fn == nil {
			return nil, ErrNilFunc
		}
	}
	handles := make([]*JoinHandle[T], 0, len(fns))
	closed := false
	for _, fn := range fns {
		h, ok := startRoot(rt, fn)
		if !ok {
			closed = true
			break
		}
		handles = append(handles, h)
	}
	for _, h := range handles {
		<-h.task.ext.onDetach
		rt.reportUnobserved(h.task.ID(), false)
	}
	if closed || rt.closing.Load() {
		return nil, closedErr(handles...)
	}
	vals := make([]T, len(fns))
	var errs []error
	for i, h := range handles {
		vals[i] = h.val
		if err := h.err(); err != nil {
			errs = append(errs, err)
		}
	}
	return vals, errors.Join(errs...)
}
