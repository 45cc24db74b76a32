package runtime

import (
	"errors"
	"log"
	goruntime "runtime"
	"sync"
	"sync/atomic"
)

// TaskFailure describes a task that failed (returned an error or panicked)
// while nobody joined it. See Config.OnTaskFailure.
type TaskFailure struct {
	ID  uint64 // the task's id (JoinHandle.ID)
	Err error  // what it returned; a *PanicError if it panicked
}

// A task's failure is observed when a Join of its handle returns its result
// (a Join that gives up on its own ctx first observes nothing). A failure nobody observes is not lost silently, as a
// goroutine's panic would not be: it is reported once, through
// Config.OnTaskFailure or, by default, the standard logger, at the first of
//   - the end of the BlockOn or WaitAll under which the task ran,
//   - the handle becoming unreachable (garbage collected) without a Join,
//   - the runtime's Close.
//
// An error that is the task's own cancellation (it returned ctx.Err() after
// its context was cancelled, as every task does when Close cancels it) is
// not a failure.
//
// failureRec is the report-in-waiting of one failure; exactly one of Join
// (observe) and a report (take) wins its state.
type failureRec struct {
	rt     *Runtime
	id     uint64
	rootID uint64 // the BlockOn/WaitAll root (or SpawnOn task) it ran under
	err    error
	state  atomic.Uint32 // failurePending, then observed or reported
}

const (
	failurePending = iota
	failureObserved
	failureReported
)

// failures holds a runtime's unobserved failures.
type failures struct {
	mu      sync.Mutex
	pending map[*failureRec]struct{}
}

// noteFailure runs when t's function has returned err (non-nil): unless a
// Join is already on its way, the failure waits to be observed or reported.
// Only failing tasks get here, so the cost is off the hot path.
func (rt *Runtime) noteFailure(t *Task, err error) {
	if t.has(flagJoined) {
		return
	}
	if cerr := t.Err(); cerr != nil && errors.Is(err, cerr) {
		return // the task's own cancellation
	}
	rec := &failureRec{rt: rt, id: t.ID(), rootID: t.rootID(), err: err}
	t.mu.Lock()
	t.extLocked().failure = rec
	t.mu.Unlock()
	rt.failures.mu.Lock()
	if rt.failures.pending == nil {
		rt.failures.pending = make(map[*failureRec]struct{})
	}
	rt.failures.pending[rec] = struct{}{}
	rt.failures.mu.Unlock()
	t.body.reportIfDropped(rec)
	if t.has(flagJoined) {
		// A Join began meanwhile; it observes rec once the task has
		// completed, but nothing needs to wait for that.
		rec.observe()
	}
}

// rootID returns the id of the task at the top of t's tree: the BlockOn or
// WaitAll root, or the SpawnOn task, t descends from.
func (t *Task) rootID() uint64 {
	for t.treeParent != nil && t.treeParent != t.rt.root {
		t = t.treeParent
	}
	return t.ID()
}

// observed marks t's failure, if any, as seen by a Join.
func (t *Task) observed() {
	t.mu.Lock()
	var rec *failureRec
	if t.ext != nil {
		rec = t.ext.failure
	}
	t.mu.Unlock()
	if rec != nil {
		rec.observe()
	}
}

func (r *failureRec) observe() {
	if r.state.CompareAndSwap(failurePending, failureObserved) {
		r.rt.failures.forget(r)
	}
}

// report hands r to the hook (or the log) unless it was observed or
// reported already.
func (r *failureRec) report() {
	if !r.state.CompareAndSwap(failurePending, failureReported) {
		return
	}
	r.rt.failures.forget(r)
	f := TaskFailure{ID: r.id, Err: r.err}
	if hook := r.rt.cfg.OnTaskFailure; hook != nil {
		hook(f)
		return
	}
	// PanicError's message is one line: the stack, which whoever reads
	// this log needs to find the panic, is printed after it.
	var pe *PanicError
	if errors.As(f.Err, &pe) {
		log.Printf("faio: task %d failed and nobody joined it: %v\n\n%s", f.ID, f.Err, pe.Stack)
		return
	}
	log.Printf("faio: task %d failed and nobody joined it: %v", f.ID, f.Err)
}

func (fs *failures) forget(r *failureRec) {
	fs.mu.Lock()
	delete(fs.pending, r)
	fs.mu.Unlock()
}

// reportUnobserved reports every pending failure under the root rootID, or
// every one when all is set (Close).
func (rt *Runtime) reportUnobserved(rootID uint64, all bool) {
	rt.failures.mu.Lock()
	if len(rt.failures.pending) == 0 {
		rt.failures.mu.Unlock()
		return
	}
	var recs []*failureRec
	for r := range rt.failures.pending {
		if all || r.rootID == rootID {
			recs = append(recs, r)
		}
	}
	rt.failures.mu.Unlock()
	for _, r := range recs {
		r.report()
	}
}

// reportIfDropped reports rec if h becomes unreachable before a Join.
func (h *JoinHandle[T]) reportIfDropped(rec *failureRec) {
	goruntime.AddCleanup(h, (*failureRec).report, rec)
}

// failure returns the task's error; nil if it succeeded.
func (h *JoinHandle[T]) failure() error { return h.err() }
