package runtime

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/faio-go/faio/modules/driver"
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
//
// # The task tree
//
// Every task lives in a tree rooted at its runtime: Close cancels the root,
// and cancelling a task cancels its subtree. To keep spawning cheap, a task
// enters its parent's list of children lazily, the first time it suspends or
// spawns; until then it is running or queued, and it learns of a
// cancellation by looking at its parent (Err), which is always in the tree
// because it has spawned. A task leaves the tree when it has finished and so
// have all its children (kids counts them, with the finished bit): so a
// cancellation still reaches the live descendants of a finished task, and
// the moment a BlockOn root leaves the tree is the moment everything under
// it has finished. The count is kept in batches, so that the cores running
// a task's children do not pass its cache line around at every spawn and
// finish (addOwnKid, worker.owe): it never reads lower than the live
// children, and it is exact again once the task has finished and no child
// of it is running.
type Task struct {
	rt   *Runtime
	body taskBody

	// treeParent is the task above this one in the tree (the spawning
	// task, or the runtime's root). Unless flagExternal is set it is also
	// the context the task was spawned with, which answers Deadline and
	// Value; otherwise that context (one derived from a task's, or
	// Background for roots) is parentCtx's, Err also consults it, and its
	// cancellation reaches the task through context.AfterFunc.
	treeParent *Task

	kids atomic.Int64 // live children, plus kidsFinished and kidCredit
	// flags holds the bits below, among them the cancellation: set once,
	// by cancel, with the error it carries (flagCancelled, flagDeadline).
	flags atomic.Uint32
	// kidCredit is the part of kids paid in advance by the task's own
	// spawns (see addOwnKid). Only the task's coroutine touches it, and
	// finishTree, after the function returned.
	kidCredit int32

	// mu guards the list of linked children and the fields of ext.
	mu         sync.Mutex
	children   *Task // head of the list of linked children
	prev, next *Task // siblings in treeParent.children
	joiner     Waker // the first Join waiting for completion
	ext        *taskExt

	// Execution state, owned by whichever worker runs the task; handed
	// between workers through the run queues (which order the accesses).
	worker *worker
	// coro is the coroutine the task runs on, from its start to its end
	// (see bind). It is atomic because other goroutines read it: with its
	// goroutine's identity it answers "am I this task?" (running), and
	// cancellation finds a pending I/O operation through it. What only a
	// task with a coroutine needs lives there, which keeps a Task (and
	// with it every JoinHandle) in a smaller size class.
	coro atomic.Pointer[coro]
	// wstate is gen<<genShift | state bits: the state of the current
	// suspension, the one word Wake, cancellation and the worker race on.
	wstate atomic.Uint64
}

// taskExt holds what few tasks need; allocated on first use, under mu, or
// by newTask before the task is shared. The two fields newTask sets are
// read without mu, behind the flag that says they are set.
type taskExt struct {
	parent     context.Context // the context spawned with (flagParentExt)
	labels     unsafe.Pointer  // the spawner's profiler labels (flagLabels; labels.go)
	doneCh     chan struct{}   // ctx Done
	afterFuncs []*afterFunc
	joiners    []Waker
	finishCh   chan struct{} // JoinHandle.Done
	stopExt    func() bool   // detaches from an external parent
	follow     func()        // detaches a task out of the tree from its parents (see follow)
	onDetach   chan struct{} // closed when the task leaves the tree (BlockOn roots)
	failure    *failureRec   // a failure waiting to be joined or reported
	id         uint64        // the task's id, given when first asked (flagID)
}

// Bits of Task.flags.
const (
	flagExternal  = 1 << iota // parent is not the tree parent
	flagLinked                // in treeParent.children
	flagCompleted             // the result is published
	flagJoined                // Join was called: a failure is observed
	flagOnDetach              // a BlockOn root: ext.onDetach is closed when it leaves the tree
	flagParentExt             // with flagExternal: the parent context is ext.parent, not Background
	flagLabels                // ext.labels holds the spawner's profiler labels
	flagWatched               // AfterFunc was called: a derived context may wait for the cancellation
	flagCancelled             // cancelled: Err is context.Canceled, or DeadlineExceeded with flagDeadline
	flagDeadline              // with flagCancelled: the error is context.DeadlineExceeded
	flagID                    // ext.id is set
)

// cancelled reports whether the task's context was cancelled.
func (t *Task) cancelled() bool { return t.flags.Load()&flagCancelled != 0 }

// cancelErr is the error of a cancellation with flags f (flagCancelled
// set).
func cancelErr(f uint32) error {
	if f&flagDeadline != 0 {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

// cancelledErr is the error of the task's cancellation, once cancel has
// returned.
func (t *Task) cancelledErr() error { return cancelErr(t.flags.Load()) }

// parentCtx returns the context the task was spawned with.
func (t *Task) parentCtx() context.Context {
	f := t.flags.Load()
	switch {
	case f&flagExternal == 0:
		return t.treeParent
	case f&flagParentExt == 0:
		return context.Background()
	}
	return t.ext.parent
}

// profLabels returns the profiler labels the task starts with.
func (t *Task) profLabels() unsafe.Pointer {
	if t.flags.Load()&flagLabels == 0 {
		return nil
	}
	return t.ext.labels
}

// kidsFinished is added to Task.kids when the task's function returns (less
// the unused kidCredit); kids equal to it means finished with no live child.
const kidsFinished = 1 << 40

// taskBody is what a task runs: a JoinHandle[T] stores the function and its
// typed result.
type taskBody interface {
	run(ctx *Task)
	fail(err error)
	failure() error                  // the task's error, nil if it succeeded
	reportIfDropped(rec *failureRec) // report rec if the handle is dropped unjoined
}

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

func (t *Task) has(flag uint32) bool { return t.flags.Load()&flag != 0 }

// extLocked returns t.ext, allocating it; t.mu must be held.
func (t *Task) extLocked() *taskExt {
	if t.ext == nil {
		t.ext = &taskExt{}
	}
	return t.ext
}

// Deadline returns the deadline of the context the task was spawned with.
func (t *Task) Deadline() (time.Time, bool) { return t.parentCtx().Deadline() }

// Done returns a channel closed when the task's context is cancelled.
//
// Once the task has finished, a cancellation of its parents reaches the
// channel only when something asks Err (which reports it at once): a
// finished task does not stay registered with its parents for a channel
// nobody may be waiting on. A goroutine that outlives the task and waits
// for its context should wait on a context derived from it
// (context.WithCancel(ctx)), which follows the parents until it is
// cancelled, Close included.
func (t *Task) Done() <-chan struct{} {
	// As for AfterFunc: the parent's cancellation must reach the channel
	// even when the task never suspends (a loop that polls Done). Once
	// the task has finished and left the tree, Done follows its parents
	// only through Err: following them for every Done ever called would
	// pile up registrations on a long-lived parent, one per finished
	// child.
	t.link()
	t.mu.Lock()
	e := t.extLocked()
	if e.doneCh == nil {
		if t.cancelled() {
			e.doneCh = closedChan
		} else {
			e.doneCh = make(chan struct{})
		}
	}
	ch := e.doneCh
	t.mu.Unlock()
	return ch
}

// follow makes t, out of the tree, still receive the cancellations of its
// tree parent and of the context it was spawned with, for its AfterFuncs:
// through the parents' AfterFunc, registered once and removed when t is
// cancelled or its last AfterFunc is stopped. Without AfterFuncs waiting
// it does nothing.
func (t *Task) follow() {
	if t.cancelled() {
		return
	}
	t.mu.Lock()
	skip := t.ext == nil || t.ext.follow != nil || len(t.ext.afterFuncs) == 0
	t.mu.Unlock()
	if skip {
		return
	}
	var stops []func() bool
	p := t.treeParent
	stops = append(stops, p.AfterFunc(func() { t.cancel(p.Err()) }))
	if t.has(flagParentExt) {
		if pc := t.parentCtx(); pc.Done() != nil {
			stops = append(stops, context.AfterFunc(pc, func() { t.cancel(pc.Err()) }))
		}
	}
	stop := func() {
		for _, s := range stops {
			s()
		}
	}
	t.mu.Lock()
	e := t.extLocked()
	if e.follow != nil || t.cancelled() || len(e.afterFuncs) == 0 {
		// Another follow won, t was cancelled, or its last AfterFunc
		// stopped meanwhile.
		t.mu.Unlock()
		stop()
		return
	}
	e.follow = stop
	t.mu.Unlock()
}

// Err returns nil while the task's context is live, then context.Canceled
// or context.DeadlineExceeded.
//
// Every Consume (so every channel operation and lock of a task) asks, so the
// common answer is small enough to inline: nil when the task was not
// cancelled (flagCancelled, raised by cancel before anything could tell of
// it) and nothing else needs asking: it is in the tree, where its parent's
// cancellation is pushed to it, and its parent context is not a foreign one.
// One atomic load.
func (t *Task) Err() error {
	if t.flags.Load()&(flagLinked|flagParentExt|flagCancelled) == flagLinked {
		return nil
	}
	return t.errSlow()
}

// errSlow is Err for a cancelled task, a task out of the tree, and a task
// spawned from a foreign context.
func (t *Task) errSlow() error {
	f := t.flags.Load()
	if f&flagCancelled != 0 {
		// The flag rises and Done closes in one hold of t.mu (mark):
		// once that hold is over, Done is closed. context.Context
		// says Err is nil while Done is open; a goroutine saw
		// Canceled here with Done still open until notify ran (found
		// by a reviewer).
		t.mu.Lock()
		//lint:ignore SA2001 the empty hold is the wait for mark's
		t.mu.Unlock()
		return cancelErr(f)
	}
	if f&flagLinked == 0 && t.treeParent != nil {
		// Not in the tree (yet, or any more: it finished and left): a
		// cancellation of the parent is not pushed to us. Asked, the
		// parent answers the same way if it is out of the tree too.
		if err := t.treeParent.Err(); err != nil {
			t.cancel(err)
			return t.cancelledErr()
		}
	}
	if f&(flagExternal|flagParentExt) == flagExternal|flagParentExt {
		// context.AfterFunc runs its callback on a new goroutine; until it
		// has, answer from the parent so Err never lags behind it. (A
		// parent context of Background, flagExternal alone, cannot end.)
		if err := t.ext.parent.Err(); err != nil {
			// What the cancellation recorded (another may have won it,
			// and a parent breaking the contract is mapped to Canceled):
			// every later Err answers from the flags.
			t.cancel(err)
			return t.cancelledErr()
		}
	}
	return nil
}

// Value returns the task itself for the runtime's key and otherwise asks
// the context the task was spawned with.
//
// So context.Cause of a task's context reports the cause of its nearest
// context.WithCancelCause ancestor, as for any Context implemented outside
// package context: a task cancelled before that ancestor (through its
// handle, say) reports context.Canceled, and the ancestor's cause once the
// ancestor is cancelled too.
func (t *Task) Value(key any) any {
	if _, ok := key.(taskKey); ok {
		return t
	}
	return t.parentCtx().Value(key)
}

// AfterFunc arranges for f to be called once the task's context is
// cancelled, like context.AfterFunc. The context package uses it to attach
// derived contexts without starting a goroutine. f runs on the goroutine
// that cancels, or on a goroutine of its own when the task is cancelled
// already.
func (t *Task) AfterFunc(f func()) (stop func() bool) {
	// A derived context may be cancelled by the parent at any time: the
	// task must be in the tree for that to reach it. A task that finished
	// and left the tree follows its parents instead (follow), as long as
	// AfterFuncs wait: as Go's context package keeps a derived context
	// with its parent until it is cancelled.
	if !t.has(flagWatched) {
		t.flags.Or(flagWatched)
	}
	t.link()
	a := &afterFunc{f: f}
	t.mu.Lock()
	if t.cancelled() {
		t.mu.Unlock()
		a.done = true
		// Not on the caller's goroutine, as context.AfterFunc: the
		// context package calls this holding the lock of the context it
		// derives, and f, that context's cancel, takes the same lock.
		go f()
		return func() bool { return false }
	}
	e := t.extLocked()
	e.afterFuncs = append(e.afterFuncs, a)
	t.mu.Unlock()
	// flagWatched went up and a went in before this look at flagLinked;
	// unlink lowers flagLinked before it looks at flagWatched (and
	// follow at the AfterFuncs): one of the two follows.
	if !t.has(flagLinked) && t.treeParent != nil {
		t.follow()
	}
	return func() bool {
		t.mu.Lock()
		if a.done {
			t.mu.Unlock()
			return false
		}
		a.done = true
		e := t.ext
		for i, b := range e.afterFuncs {
			if b == a {
				e.afterFuncs = append(e.afterFuncs[:i], e.afterFuncs[i+1:]...)
				break
			}
		}
		// The last waiter of a task out of the tree gone (a derived
		// context cancelled), its registrations with its parents go
		// too: they must not pile up there.
		var unfollow func()
		if len(e.afterFuncs) == 0 && e.follow != nil {
			unfollow, e.follow = e.follow, nil
		}
		t.mu.Unlock()
		if unfollow != nil {
			unfollow()
		}
		return true
	}
}

// ID returns the task's id, unique within its runtime (0 for a task that
// was never spawned). Ids are given when first asked for, in that order:
// most tasks are never asked, and a task without one is 8 bytes smaller.
func (t *Task) ID() uint64 {
	if t == nil || t.rt == nil {
		return 0
	}
	if t.flags.Load()&flagID == 0 {
		t.mu.Lock()
		if t.flags.Load()&flagID == 0 {
			t.extLocked().id = t.rt.nextID.Add(1)
			// Behind the flag, as newTask's ext fields: a reader that
			// sees it set sees ext and its id.
			t.flags.Or(flagID)
		}
		t.mu.Unlock()
	}
	return t.ext.id
}

// String describes the task for logs and errors.
func (t *Task) String() string { return "faio task " + itoa(t.ID()) }

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

// WorkerID returns the index of the worker running the task when called by
// the task itself, or -1 elsewhere. It is meant for diagnostics: a task may
// move between workers at every suspension.
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
	if t == nil {
		return nil
	}
	if t.isRunning() {
		return t
	}
	return nil
}

// isRunning reports whether the calling goroutine is t's coroutine,
// running t. A coroutine's identity is set when its goroutine starts (see
// newCoro) and cleared before it ends, and bind changes t's coroutine only
// from the worker that is about to resume it, so a goroutine that is not
// t's coroutine never passes, whatever it races with. A finished task
// keeps its coroutine (see bind), which runs other tasks later: the
// coroutine's task, read only once the caller is known to be that
// coroutine (the worker writes it before resuming it, or the coroutine
// itself does), tells whether it still runs t.
func (t *Task) isRunning() bool {
	c := t.coro.Load()
	return c != nil && c.goid.Load() == getg() && c.task == t
}

// bind gives t the coroutine c to run on (nil: takes it back). A task that
// finishes is not unbound: nothing reads a finished task's coroutine but
// isRunning, which checks the coroutine's task as well, and the atomic
// store saved was 1 of the 3 that each task's run cost (W1).
func (t *Task) bind(c *coro) {
	t.coro.Store(c)
}

// cancel cancels the task's context with err (context.Canceled or
// context.DeadlineExceeded), resumes its current suspension if that waits on
// the task's own context, and cancels its linked children and AfterFunc
// callbacks. Unlinked children see it through Err.
//
// As with package context's cancel, every linked descendant is cancelled
// once cancel returns, also when another cancel of t won the race: the
// winner marks t and its linked descendants under t.mu (markKidsLocked), so
// the loser, which finds flagCancelled set under the same lock, has nothing left to
// do. It must not push the cancellation down itself: a task cancelled by
// each of its many children (a group whose members cancel it when they
// fail, an AfterFunc of each) would then walk all its children once per
// child, and an AfterFunc that cancels the parent would nest one walk in
// another, once per child, on the goroutine that cancels.
func (t *Task) cancel(err error) {
	t.mu.Lock()
	if !t.mark(err) {
		t.mu.Unlock()
		return
	}
	marked := t.markKidsLocked(err, []*Task{t})
	t.mu.Unlock()
	notify(marked)
}

// markKidsLocked marks the linked descendants of t, whose mu is held, and
// returns marked with those whose error it set appended, parents before
// children. Each task is marked under its own mu, which stays held while
// its children are: a cancel that lost the race for one of them waits on
// that lock until they are marked, and one that won it before (its handle's
// Cancel, say) has marked them by the time we get the lock. The locks are
// taken parent before child, as nothing takes them child before parent;
// nothing here runs a callback or waits for anything but these locks.
func (t *Task) markKidsLocked(err error, marked []*Task) []*Task {
	for c := t.children; c != nil; c = c.next {
		c.mu.Lock()
		if c.mark(err) {
			marked = append(marked, c)
			marked = c.markKidsLocked(err, marked)
		}
		c.mu.Unlock()
	}
	return marked
}

// mark is the first half of cancel: it sets the task's error, unless it
// has one, and reports whether it did, and closes Done. t.mu must be held:
// Err, which sees the error first, waits for that hold to end, and so
// never answers before Done is closed. Until notify has run, nothing else
// tells of the cancellation.
//
// The error is one of the two a context's Err may return (context.Context
// says so), so it is kept as a bit beside flagCancelled, set with it in one
// CAS: Err needs one load, and a cancellation allocates nothing. A context
// that breaks that contract and ends with another error cancels the task
// with context.Canceled, or with DeadlineExceeded if its error wraps that.
func (t *Task) mark(err error) bool {
	set := uint32(flagCancelled)
	if err == context.DeadlineExceeded || err != context.Canceled && errors.Is(err, context.DeadlineExceeded) {
		set |= flagDeadline
	}
	for {
		f := t.flags.Load()
		if f&flagCancelled != 0 {
			return false
		}
		if t.flags.CompareAndSwap(f, f|set) {
			if e := t.ext; e != nil && e.doneCh != nil && e.doneCh != closedChan {
				// Closed, and kept: Done must return the same channel
				// on every call (context.Context).
				close(e.doneCh)
			}
			return true
		}
	}
}

// notify is the second half of cancel, for the tasks whose error one cancel
// set (mark, which closed their Done channels), listed parents before
// children: it ends their waits, parents first, then runs their AfterFunc
// callbacks, children first, in the order the cancellation had when each
// task pushed it to its children itself. It runs with no lock held: a
// callback may cancel any task, these included.
func notify(marked []*Task) {
	type callbacks struct {
		afs      []*afterFunc
		unfollow func()
	}
	var later []callbacks
	for _, t := range marked {
		var cb callbacks
		t.mu.Lock()
		if e := t.ext; e != nil {
			cb.unfollow, e.follow = e.follow, nil
			if e.doneCh == nil {
				e.doneCh = closedChan // (mark closed one made before)
			}
			cb.afs = e.afterFuncs
			e.afterFuncs = nil
			for _, a := range cb.afs {
				a.done = true
			}
		}
		t.mu.Unlock()
		if s := t.wstate.Load(); s&stSelfCancel != 0 {
			t.cancelWait(s >> genShift)
		}
		if cb.afs != nil || cb.unfollow != nil {
			later = append(later, cb)
		}
	}
	for i := len(later) - 1; i >= 0; i-- {
		for _, a := range later[i].afs {
			a.f()
		}
		if later[i].unfollow != nil {
			later[i].unfollow()
		}
	}
}

// cancelWait resumes suspension gen with a cancellation, if it is still
// waiting.
func (t *Task) cancelWait(gen uint64) {
	for {
		s := t.wstate.Load()
		if s>>genShift != gen || s&stMask != stWaiting {
			return
		}
		if s&stIO == 0 {
			if won, deferred := t.claim(gen, stCancelled); won && !deferred {
				t.rt.enqueue(t)
			}
			return
		}
		if s&stIOCancel != 0 {
			return // requested already
		}
		// The ring's worker, published (atomically, before the wait) by
		// startIO: t.worker itself may be rewritten at any moment by a
		// worker resuming the task after a completion we lose to. A task
		// keeps its coroutine while it waits, so if the CAS below finds
		// the same wait, c and the operation loaded from it are that
		// wait's; if the wait ended since, c may be nil or another
		// task's, and the CAS fails.
		c := t.coro.Load()
		if c == nil {
			continue
		}
		w, id := c.ioWorker.Load(), driver.OpID(c.ioID.Load())
		if t.wstate.CompareAndSwap(s, s|stIOCancel) {
			w.requestCancel(id)
			return
		}
	}
}

// link puts t into its tree parent's list of children, once; from then on
// cancellations of the parent are pushed to t. The check is small enough to
// inline: link runs at every suspension, on the task's coroutine, whose
// stack starts small (see linkSlow).
func (t *Task) link() {
	if t.flags.Load()&flagLinked == 0 {
		t.linkSlow()
	}
}

// linkSlow links t below its tree parent. newTask links a parent before
// its first child exists, so the parent is linked already; if it ever is
// not, it is linked first, so that no child is in the tree below a parent
// that is not. It is not inlined into link, and link does not recurse, so
// that a task's first suspension, the deepest its coroutine's stack
// usually gets, costs one frame here: one more grew every new coroutine's
// 2 KiB stack to 4 KiB, which cost W5 (100,000 new sleepers) 8-34% of its
// CPU in copying stacks.
//
//go:noinline
func (t *Task) linkSlow() {
	p := t.treeParent
	if p == nil {
		return // the runtime's root
	}
	if !p.has(flagLinked) {
		p.linkSlow()
	}
	p.mu.Lock()
	if t.has(flagLinked) {
		p.mu.Unlock()
		return
	}
	// A cancellation of p that marked p's children before t was among
	// them reaches t here, marked before t counts as linked: Err trusts a
	// linked task's flags, and must not answer nil once p.cancel has
	// returned. t has no linked child yet (a child links only below a
	// linked parent), so marking it marks its part of the tree, as
	// markKidsLocked would have. The rest of the cancellation follows the
	// unlock.
	pf := p.flags.Load()
	marked := false
	if pf&flagCancelled != 0 {
		t.mu.Lock() // parent before child, as everywhere
		marked = t.mark(cancelErr(pf))
		t.mu.Unlock()
	}
	t.flags.Or(flagLinked)
	if t.kids.Load() == kidsFinished {
		// t finished with no child left: it leaves the tree, or has
		// left it (a context derived from t after it ended: AfterFunc).
		// Linked now, it would stay in p's list for good. The flag goes
		// up before this look at the count, as finishTree's count goes
		// down before unlink's look at the flag: either unlink sees the
		// flag (and, under p.mu, takes t out), or this sees the count.
		t.flags.And(^uint32(flagLinked))
		p.mu.Unlock()
		if marked {
			notify([]*Task{t})
		}
		return
	}
	t.next = p.children
	if p.children != nil {
		p.children.prev = t
	}
	p.children = t
	p.mu.Unlock()
	if marked {
		notify([]*Task{t})
	}
}

// addKidIfLive counts a new child of t, from any goroutine, unless t has
// finished and left the tree with all its children (kids is kidsFinished
// then, for good), which it reports. Counting a child there would make t
// leave a second time when that child ends: its parent would lose the
// count of a live child and the head of its list of children.
func (t *Task) addKidIfLive() bool {
	for {
		k := t.kids.Load()
		if k == kidsFinished {
			return false
		}
		if t.kids.CompareAndSwap(k, k+1) {
			return true
		}
	}
}

// kidBatch is how many children a task's own spawns count in kids at a
// time (see addOwnKid).
const kidBatch = 64

// addOwnKid counts a new child of t spawned by t itself, on its coroutine.
// The spawner's core and the cores that finish the children would pass the
// cache line of kids back and forth at every spawn (a quarter of W1's time
// at two workers went to that add and the finishing one): the spawns
// count their children kidBatch at a time instead, and finishTree returns
// what was not used. Counting early only keeps kids higher, so it never
// reads finished-and-childless too soon.
func (t *Task) addOwnKid() {
	if t.kidCredit == 0 {
		t.kids.Add(kidBatch)
		t.kidCredit = kidBatch
	}
	t.kidCredit--
}

// finishTree records that t's function returned; t leaves the tree once
// its children have too, and the last one to leave takes its finished
// parent out with it. w is the worker that ran t, or nil (see leave).
func (t *Task) finishTree(w *worker) {
	credit := int64(t.kidCredit)
	t.kidCredit = 0
	if t.kids.Add(kidsFinished-credit) != kidsFinished {
		return
	}
	t.leave(w)
}

// leave takes t, finished and childless, out of the tree, and with it every
// ancestor that is now finished and childless too. On a worker, t's count
// in its parent's kids is not taken off at once but owed by the worker
// (see worker.owe), which settles it in one add with its siblings'.
func (t *Task) leave(w *worker) {
	for t != nil {
		p := t.unlink()
		if p == nil {
			return
		}
		if w != nil {
			w.owe(p)
			return
		}
		t = p.release(1)
	}
}

// unlink takes t out of its parent's list of children and closes its
// onDetach channel; it returns the parent, whose kids still count t.
func (t *Task) unlink() *Task {
	p := t.treeParent
	if p == nil {
		return nil
	}
	if t.has(flagLinked) {
		p.mu.Lock()
		// Again under the lock: linkSlow may have raised the flag and
		// lowered it again without linking t.
		if t.has(flagLinked) {
			if t.prev != nil {
				t.prev.next = t.next
			} else {
				p.children = t.next
			}
			if t.next != nil {
				t.next.prev = t.prev
			}
			t.prev, t.next = nil, nil
			// Out of the tree, t follows its parent's cancellation
			// through Err, as a task never linked does, and, for
			// those waiting on it, through follow.
			t.flags.And(^uint32(flagLinked))
		}
		p.mu.Unlock()
		if t.has(flagWatched) {
			t.follow()
		}
	}
	if t.has(flagOnDetach) {
		// (A flag, not t.ext: a ctx.Done call may be setting t.ext.)
		t.mu.Lock()
		close(t.ext.onDetach)
		t.mu.Unlock()
	}
	return p
}

// release takes n children that left the tree off p's count, and returns
// p if it is now finished and childless, to leave the tree in turn.
func (p *Task) release(n int64) *Task {
	left := p.kids.Add(-n)
	if p == p.rt.root {
		if left == 0 && p.rt.closing.Load() {
			p.rt.signalIdle()
		}
		return nil
	}
	if left == kidsFinished {
		return p
	}
	return nil
}

// complete publishes the result: Join returns from now on and the joiners
// are woken.
func (t *Task) complete() {
	t.mu.Lock()
	t.flags.Or(flagCompleted)
	first := t.joiner
	t.joiner = Waker{}
	var joiners []Waker
	var stopExt func() bool
	if t.ext != nil {
		joiners, stopExt = t.completeExtLocked()
	}
	t.mu.Unlock()
	if stopExt != nil {
		// After the unlock: detaching from the external parent runs
		// context code that may take a parent's lock (the stop of an
		// AfterFunc on a task that follows its tree parent, say), and
		// a cancellation takes a parent's lock, then its children's.
		// Called under t.mu it deadlocked with Close's cancellation
		// (found by TestChaosCloseAtAnyMoment).
		stopExt()
	}
	first.Wake()
	for _, w := range joiners {
		w.Wake()
	}
}

// completeExtLocked completes t's ext under t.mu: it returns the joiners
// to wake and the detachment from the external parent to call, both after
// the unlock.
func (t *Task) completeExtLocked() ([]Waker, func() bool) {
	e := t.ext
	joiners := e.joiners
	e.joiners = nil
	if e.finishCh != nil {
		close(e.finishCh)
	} else {
		e.finishCh = closedChan
	}
	stop := e.stopExt
	e.stopExt = nil
	return joiners, stop
}

// registerJoiner adds w to the tasks to wake at completion, unless the task
// has completed already.
func (t *Task) registerJoiner(w Waker) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.has(flagCompleted) {
		return false
	}
	if t.joiner == (Waker{}) || t.joiner.stale() {
		// The usual single Join needs no allocation.
		t.joiner = w
		return true
	}
	// Joins that ended (a timeout, a cancellation) leave their Wakers
	// here: dropped now, they cannot pile up while someone polls a
	// long-lived task with Joins that time out.
	e := t.extLocked()
	e.joiners = slices.DeleteFunc(e.joiners, Waker.stale)
	e.joiners = append(e.joiners, w)
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
