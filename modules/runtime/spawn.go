package runtime

import (
	"context"
	"errors"
	"sync/atomic"
)

// JoinHandle is the handle of a spawned task: Join waits for its result,
// Cancel cancels its context, Done reports completion to plain goroutines.
// The task and its handle are one allocation.
type JoinHandle[T any] struct {
	task Task
	fn   func(context.Context) (T, error)
	val  T
	err  error
}

func (h *JoinHandle[T]) run(t *Task) {
	fn := h.fn
	h.fn = nil
	h.val, h.err = fn(t)
}

func (h *JoinHandle[T]) fail(err error) {
	var zero T
	h.val, h.err = zero, err
}

// failed returns a handle that is already complete with err, for a task
// that could not be spawned.
func failed[T any](err error) *JoinHandle[T] {
	h := &JoinHandle[T]{err: err}
	h.task.completed.Store(true)
	h.task.finishCh = closedChan
	h.task.errv.Store(&err)
	return h
}

// Join waits for the task to finish and returns its result. It returns
// ctx.Err() if ctx is cancelled first (the task keeps running), and a
// *PanicError if the task panicked. Join may be called any number of
// times, from tasks and plain goroutines.
func (h *JoinHandle[T]) Join(ctx context.Context) (T, error) {
	if !h.task.completed.Load() {
		var err error
		if t := taskFor(ctx); t != nil {
			t.kind = kindJoin
			t.joinTarget = &h.task
			err = t.suspend(ctx)
		} else {
			err = parkGoroutine(ctx, h.task.registerJoiner)
		}
		if err != nil {
			var zero T
			return zero, err
		}
	}
	return h.val, h.err
}

// Cancel cancels the task's context. The task sees it at its next faio
// blocking call (which returns ctx.Err()) or when it checks ctx.Err().
func (h *JoinHandle[T]) Cancel() { h.task.cancel(context.Canceled) }

// Done returns a channel closed once the task has finished.
func (h *JoinHandle[T]) Done() <-chan struct{} {
	t := &h.task
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finishCh == nil {
		t.finishCh = make(chan struct{})
	}
	return t.finishCh
}

// ID returns the task's id (0 for a task that could not be spawned).
func (h *JoinHandle[T]) ID() uint64 { return h.task.id }

// Spawn starts fn as a new task in the runtime of the task that ctx belongs
// to, with ctx as its parent context: cancelling ctx cancels the new task.
// Called by the task itself, the new task goes to its worker's local queue
// and at most one sleeping worker is woken to steal; from other goroutines
// it goes to the global queue.
//
// When ctx carries no faio task, or the runtime is closed, Spawn returns a
// handle whose Join fails with ErrNoRuntime or ErrClosed.
func Spawn[T any](ctx context.Context, fn func(context.Context) (T, error)) *JoinHandle[T] {
	parent := Current(ctx)
	if parent == nil {
		return failed[T](ErrNoRuntime)
	}
	rt := parent.rt
	h := &JoinHandle[T]{fn: fn}
	if !rt.newTask(&h.task, h, parent, ctx) {
		return failed[T](ErrClosed)
	}
	if cur := parent.running(); cur != nil {
		w := cur.worker
		h.task.worker = w
		w.stats.spawned.Add(1)
		w.pushLocal(&h.task)
		rt.notifyOne()
		return h
	}
	rt.spawnedOutside.Add(1)
	if err := rt.submit(&h.task); err != nil {
		return failed[T](err)
	}
	return h
}

// SpawnOn starts fn as a new task on rt from any goroutine: it goes to the
// global queue. The task is not part of any BlockOn; Close cancels it.
func SpawnOn[T any](rt *Runtime, fn func(context.Context) (T, error)) *JoinHandle[T] {
	h := &JoinHandle[T]{fn: fn}
	if !rt.newTask(&h.task, h, rt.root, context.Background()) {
		return failed[T](ErrClosed)
	}
	rt.spawnedOutside.Add(1)
	if err := rt.submit(&h.task); err != nil {
		return failed[T](err)
	}
	return h
}

// scope counts the tasks of one BlockOn: its root and everything spawned
// under it.
type scope struct {
	pending atomic.Int64
	ch      chan struct{}
}

func (s *scope) done() {
	if s.pending.Add(-1) == 0 {
		close(s.ch)
	}
}

// BlockOn runs fn as a root task on rt and returns its result once it and
// every task spawned under it (transitively) have finished: nothing started
// inside outlives the call. It blocks the calling goroutine, so it must not
// be called from a faio task (it returns ErrOnWorker there). If rt is
// closed, or closes while BlockOn waits, it returns ErrClosed.
func BlockOn[T any](rt *Runtime, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if onCoroutine() {
		return zero, ErrOnWorker
	}
	s := &scope{ch: make(chan struct{})}
	s.pending.Store(1)
	h := &JoinHandle[T]{fn: fn}
	h.task.scope = s
	if !rt.newRoot(&h.task, h) {
		return zero, ErrClosed
	}
	<-s.ch
	if rt.closing.Load() && errors.Is(h.task.Err(), context.Canceled) {
		return zero, ErrClosed
	}
	return h.val, h.err
}

// newRoot starts a BlockOn root task; its scope is already set. When it
// reports false the task did not start and has left its scope.
func (rt *Runtime) newRoot(t *Task, body taskBody) bool {
	s := t.scope
	if !rt.newTask(t, body, rt.root, context.Background()) {
		s.done()
		return false
	}
	// newTask took the root's (nil) scope and counted nothing: the scope
	// already counts this task.
	t.scope = s
	rt.spawnedOutside.Add(1)
	if err := rt.submit(t); err != nil {
		// Close raced with us: the task will never run.
		rt.finish(t)
		return false
	}
	return true
}

// WaitAll runs every fn as a root task on rt, concurrently, and returns
// their results in order once all of them and everything they spawned have
// finished. The error joins the tasks' errors (nil if none failed).
func WaitAll[T any](rt *Runtime, fns ...func(context.Context) (T, error)) ([]T, error) {
	if onCoroutine() {
		return nil, ErrOnWorker
	}
	s := &scope{ch: make(chan struct{})}
	s.pending.Store(int64(len(fns)))
	if len(fns) == 0 {
		return nil, nil
	}
	handles := make([]*JoinHandle[T], len(fns))
	for i, fn := range fns {
		h := &JoinHandle[T]{fn: fn}
		h.task.scope = s
		if !rt.newRoot(&h.task, h) {
			// newRoot accounted for fns[i] itself.
			for range fns[i+1:] {
				s.done()
			}
			<-s.ch
			return nil, ErrClosed
		}
		handles[i] = h
	}
	<-s.ch
	vals := make([]T, len(fns))
	var errs []error
	for i, h := range handles {
		vals[i] = h.val
		if h.err != nil {
			errs = append(errs, h.err)
		}
	}
	if rt.closing.Load() {
		return vals, ErrClosed
	}
	return vals, errors.Join(errs...)
}
