package runtime

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"unsafe"
)

// Hazard is a worker's announcement that the task it runs is using an
// object in a section that neither suspends nor yields: a system call that
// cannot block, such as a read from the page cache with RWF_NOWAIT. It is
// a reference that costs a store to the worker's own memory instead of an
// atomic update of a counter that every worker shares: many tasks reading
// one file from several workers made its reference count's cache line
// bounce between their CPUs (10% of a 4 KiB cached read's cost on two
// workers).
//
// The protocol is a hazard pointer's. The user publishes the object with
// Runtime.Protect, then checks that the object is not being destroyed, and does
// not use it if it is. Whoever destroys the object first marks it as being
// destroyed, then waits with WaitUnprotected until no worker announces it.
// Both sides use sequentially consistent atomics, so either the user sees
// the mark or the destroyer sees the announcement.
type Hazard struct {
	p atomic.Pointer[byte]
}

// Protect announces that the calling task uses p until Release, and
// returns the announcement, which rt.WaitUnprotected(p) waits for. It
// returns nil when the caller is not a running task of rt (a plain
// goroutine, a task of another runtime, whose announcement rt would not
// see), or when the task's worker already announces an object: the caller
// then takes a reference of another kind. The task is found from ctx,
// which may derive from its context, or else from the calling coroutine.
// Between Protect and Release the task must not suspend, yield or call
// anything that might (a Consume, a faio operation): a destroyer waits for
// Release without suspending. A task that ends inside its section (returns,
// panics, calls runtime.Goexit) ends its announcement with it.
func (rt *Runtime) Protect(ctx context.Context, p unsafe.Pointer) *Hazard {
	if rt == nil {
		return nil
	}
	t, ok := ctx.(*Task)
	if !ok {
		t = taskFor(ctx)
	}
	if t == nil || t.rt != rt || !t.isRunning() {
		return nil
	}
	h := &t.worker.hazard
	if h.p.Load() != nil {
		return nil
	}
	h.p.Store((*byte)(p))
	return h
}

// Release ends the announcement Protect made.
func (h *Hazard) Release() {
	h.p.Store(nil)
}

// end ends an announcement that the task which made it never released: the
// task has ended (returned, panicked, or called runtime.Goexit) inside its
// section. Destroyers waiting for it would otherwise wait for ever.
func (h *Hazard) end() {
	if h.p.Load() != nil {
		h.p.Store(nil)
	}
}

// WaitUnprotected returns once no worker of rt announces p. The caller
// must have marked p as being destroyed before it calls, so that no new
// announcement of p is used (see Hazard); announcements last a system
// call that does not block, so the wait yields the processor instead of
// suspending.
func (rt *Runtime) WaitUnprotected(p unsafe.Pointer) {
	if rt == nil {
		return
	}
	for _, w := range rt.workers {
		for w.hazard.p.Load() == (*byte)(p) {
			goruntime.Gosched()
		}
	}
}
