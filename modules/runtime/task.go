package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio/modules/timerwheel"
)

// Task is a running faio task. A *Task is the context.Context its function
// receives: it is cancelled when the task's JoinHandle is cancelled, when the
// context it was spawned from is cancelled, or when the runtime closes, and
// every faio blocking call made with it suspends the task instead of blocking
// its worker.
//
// A task's context may be handed to other goroutines like any context; there
// it blocks the calling goroutine instead, since only the task itself can
// switch its coroutine.
type Task struct {
	rt   *Runtime
	id   uint64
	body taskBody

	// parent is the context the task was spawned with: Deadline and
	// Value are answered from it. When it is not a task (a context derived
	// from one, or any other context), external is set and its
	// cancellation reaches the task through context.AfterFunc.
	parent   context.Context
	external bool
	stopExt  func() bool

	// treeParent is the task whose tree this task lives in: cancelling a
	// task cancels its subtree, and Close cancels the runtime's root.
	treeParent *Task
	scope      *scope

	errv atomic.Pointer[error] // set once, by cancel

	// mu guards the tree links, the ctx Done channel, AfterFunc callbacks
	// and the completion state below.
	mu         sync.Mutex
	children   *Task // head of the list of live children
	prev, next *Task // siblings in treeParent.children
	finished   bool  // the function has returned
	detached   bool  // unlinked from treeParent: no longer in the tree
	doneCh     chan struct{}
	afterFuncs []*afterFunc
	joiners    []Waker
	finishCh   chan struct{}
	completed  atomic.Bool
	coroG      atomic.Uintptr // identity of the coroutine running the task

	// Execution state, owned by whichever worker runs the task; handed
	// between workers through the run queues (which order the accesses).
	worker      *worker
	coro        *coro
	yieldReason uint8
	budget      int // coop budget spent since the last resume
	// The suspension being prepared (set by the task before it switches
	// away, read by the worker after).
	gen         uint64
	kind        uint8
	suspendCtx  context.Context
	register    func(Waker) bool
	joinTarget  *Task
	sleepUntil  time.Duration
	timer       timerwheel.Handle
	timerWorker *worker
	// wstate is gen<<3 | flags: the state of the current suspension, the
	// one word Wake, cancellation and the worker race on.
	wstate atomic.Uint64
}

// taskBody is what a task runs: a JoinHandle[T] stores the function and its
// typed result.
type taskBody interface {
	run(ctx *Task)
	fail(err error)
}

// States of a suspension, in the low bits of Task.wstate.
const (
	stIdle      = 0 // not suspended
	stWaiting   = 1 // registered; Wake or cancellation may resume it
	stWoken     = 2 // resumed by Wake: the wait succeeded
	stCancelled = 3 // resumed by cancellation: the wait failed
	stMask      = 3
	// stSelfCancel marks a suspension whose context is the task itself, so
	// the task's own cancel must resume it (a derived context does so
	// through its AfterFunc).
	stSelfCancel = 4
	genShift     = 3
)

// Reasons a coroutine switches back to its worker.
const (
	reasonDone = iota
	reasonYield
	reasonSuspend
)

// Kinds of suspension the worker completes on its own side.
const (
	kindRegister = iota // call the register function given to Suspend
	kindSleep           // insert into the worker's timer wheel
	kindJoin            // wait for joinTarget to complete
	kindYieldNow        // resume at once (coop budget exhausted)
)

type afterFunc struct {
	f    func()
	done bool
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

type taskKey struct{}

// Deadline returns the deadline of the context the task was spawned with.
func (t *Task) Deadline() (time.Time, bool) { return t.parent.Deadline() }

// Done returns a channel closed when the task's context is cancelled.
func (t *Task) Done() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.doneCh == nil {
		if t.errv.Load() != nil {
			t.doneCh = closedChan
		} else {
			t.doneCh = make(chan struct{})
		}
	}
	return t.doneCh
}

// Err returns nil while the task's context is live, then context.Canceled
// or context.DeadlineExceeded.
func (t *Task) Err() error {
	if p := t.errv.Load(); p != nil {
		return *p
	}
	if t.external {
		// context.AfterFunc runs its callback on a new goroutine; until it
		// has, answer from the parent so Err never lags behind it.
		if err := t.parent.Err(); err != nil {
			t.cancel(err)
			return err
		}
	}
	return nil
}

// Value returns the task itself for the runtime's key and otherwise asks
// the context the task was spawned with.
func (t *Task) Value(key any) any {
	if _, ok := key.(taskKey); ok {
		return t
	}
	return t.parent.Value(key)
}

// AfterFunc arranges for f to be called once the task's context is
// cancelled, like context.AfterFunc. The context package uses it to attach
// derived contexts without starting a goroutine. f runs on the goroutine
// that cancels.
func (t *Task) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	t.mu.Lock()
	if t.errv.Load() != nil {
		t.mu.Unlock()
		a.done = true
		f()
		return func() bool { return false }
	}
	t.afterFuncs = append(t.afterFuncs, a)
	t.mu.Unlock()
	return func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		if a.done {
			return false
		}
		a.done = true
		for i, b := range t.afterFuncs {
			if b == a {
				t.afterFuncs = append(t.afterFuncs[:i], t.afterFuncs[i+1:]...)
				break
			}
		}
		return true
	}
}

// ID returns the task's id, unique within its runtime.
func (t *Task) ID() uint64 { return t.id }

// String describes the task for logs and errors.
func (t *Task) String() string { return "faio task " + itoa(t.id) }

// Current returns the task whose context ctx is or derives from, or nil.
func Current(ctx context.Context) *Task {
	if t, ok := ctx.(*Task); ok {
		return t
	}
	if ctx == nil {
		return nil
	}
	t, _ := ctx.Value(taskKey{}).(*Task)
	return t
}

// WorkerID returns the index of the worker that ran the task most recently,
// or -1 before it first ran. It is meant for diagnostics: a task may move
// between workers at every suspension.
func (t *Task) WorkerID() int {
	if cur := t.running(); cur != nil {
		return cur.worker.id
	}
	return -1
}

// running returns t if the calling goroutine is t's coroutine, else nil.
// Only then may the caller switch t's coroutine or use its worker's
// owner-only state.
func (t *Task) running() *Task {
	if t != nil && t.coroG.Load() == getg() {
		return t
	}
	return nil
}

// cancel cancels the task's context with err (context.Canceled or
// context.DeadlineExceeded), resumes its current suspension if that waits on
// the task's own context, and cancels its subtree and AfterFunc callbacks.
func (t *Task) cancel(err error) {
	if !t.errv.CompareAndSwap(nil, &err) {
		return
	}
	t.mu.Lock()
	if t.doneCh == nil {
		t.doneCh = closedChan
	} else if t.doneCh != closedChan {
		close(t.doneCh)
	}
	var kids []*Task
	for c := t.children; c != nil; c = c.next {
		kids = append(kids, c)
	}
	afs := t.afterFuncs
	t.afterFuncs = nil
	for _, a := range afs {
		a.done = true
	}
	t.mu.Unlock()

	if s := t.wstate.Load(); s&stSelfCancel != 0 {
		t.cancelWait(s >> genShift)
	}
	for _, c := range kids {
		c.cancel(err)
	}
	for _, a := range afs {
		a.f()
	}
}

// cancelWait resumes suspension gen with a cancellation, if it is still
// waiting.
func (t *Task) cancelWait(gen uint64) {
	if t.claim(gen, stCancelled) {
		t.rt.enqueue(t)
	}
}

// link puts t into parent's list of children, or into the runtime root's
// when parent has already left the tree, and reports whether t must start
// cancelled.
func (t *Task) link(parent *Task) {
	for {
		parent.mu.Lock()
		if parent.detached {
			parent.mu.Unlock()
			parent = t.rt.root
			continue
		}
		t.treeParent = parent
		t.next = parent.children
		if parent.children != nil {
			parent.children.prev = t
		}
		parent.children = t
		cancelled := parent.errv.Load()
		parent.mu.Unlock()
		if cancelled != nil {
			t.cancel(*cancelled)
		}
		return
	}
}

// finishTree records that t's function returned and leaves the tree once t
// has no live children; the last child to leave takes its finished parent
// out with it.
func (t *Task) finishTree() {
	t.mu.Lock()
	t.finished = true
	leave := t.children == nil
	if leave {
		t.detached = true
	}
	t.mu.Unlock()
	for leave {
		p := t.treeParent
		p.mu.Lock()
		if t.prev != nil {
			t.prev.next = t.next
		} else {
			p.children = t.next
		}
		if t.next != nil {
			t.next.prev = t.prev
		}
		t.prev, t.next = nil, nil
		leave = p.finished && p.children == nil && p != t.rt.root
		if leave {
			p.detached = true
		}
		p.mu.Unlock()
		t = p
	}
}

// complete publishes the result: Join returns from now on and the joiners
// are woken.
func (t *Task) complete() {
	t.mu.Lock()
	t.completed.Store(true)
	joiners := t.joiners
	t.joiners = nil
	if t.finishCh != nil {
		close(t.finishCh)
	} else {
		t.finishCh = closedChan
	}
	t.mu.Unlock()
	for _, w := range joiners {
		w.Wake()
	}
	if t.stopExt != nil {
		t.stopExt()
		t.stopExt = nil
	}
}

// registerJoiner adds w to the tasks to wake at completion, unless the task
// has completed already.
func (t *Task) registerJoiner(w Waker) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.completed.Load() {
		return false
	}
	t.joiners = append(t.joiners, w)
	return true
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
