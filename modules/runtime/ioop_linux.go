package runtime

import (
	"errors"
	"syscall"
	"time"

	"github.com/faio-go/faio/modules/timerwheel"
	"github.com/faio-go/faio/modules/uring"
)

// Op is one io_uring operation: Prep fills the submission entry (opcode,
// fd, buffers; not UserData, which the runtime owns). The Op value is kept
// in the in-flight record from submission until the completion is reaped,
// so every buffer, iovec array, sockaddr or path it references stays
// reachable by the GC (and, being heap memory, unmoved) while the kernel may
// use it. An Op must reference its memory through Go pointers (slices,
// pointers), never only through integers.
//
// Prep runs on the worker that submits; it must not block.
type Op interface {
	Prep(sqe *uring.SQE)
}

// Err returns the error of a failed completion (a negative Res), wrapping
// the errno so errors.Is(err, syscall.ECONNRESET) works; nil otherwise.
func (r Result) Err() error { return uring.ResultError(r.Res) }

// ioRecord is an operation in flight on a worker's ring. Records live in a
// per-worker slab and are recycled; UserData is index<<recordGenBits | gen
// so a late completion for a recycled record is recognised and ignored.
type ioRecord struct {
	task      *Task
	taskGen   uint64
	op        Op // keeps op's memory reachable until the completion
	gen       uint32
	cancelled bool  // ASYNC_CANCEL submitted
	next      int32 // free list link
}

const (
	recordGenBits = 24
	recordGenMask = 1<<recordGenBits - 1
	// User data below firstRecord is reserved (wakeUserData) or marks
	// completions to ignore (cancelUserData).
	cancelUserData = 2
	firstRecord    = 1 << recordGenBits
)

// ioRecords is a worker's slab of in-flight records. Index 0 is never
// used, so no UserData of a record collides with the reserved values.
type ioRecords struct {
	recs     []ioRecord
	free     int32 // head of the free list, 0 when empty
	inFlight int
}

func (s *ioRecords) alloc() int32 {
	if s.free == 0 {
		if len(s.recs) == 0 {
			s.recs = append(s.recs, ioRecord{})
		}
		s.recs = append(s.recs, ioRecord{})
		s.free = int32(len(s.recs) - 1)
	}
	i := s.free
	s.free = s.recs[i].next
	s.recs[i].next = 0
	s.inFlight++
	return i
}

func (s *ioRecords) release(i int32) {
	r := &s.recs[i]
	r.task, r.op, r.cancelled = nil, nil, false
	r.gen = (r.gen + 1) & recordGenMask
	r.next = s.free
	s.free = i
	s.inFlight--
}

func userData(i int32, gen uint32) uint64 { return uint64(i)<<recordGenBits | uint64(gen) }

// startIO runs on worker w right after t suspended for an I/O: it prepares
// the operation on w's ring. The wait is published by the caller.
func (w *worker) startIO(t *Task, gen uint64) {
	c := t.coro
	i := w.io.recs.alloc()
	r := &w.io.recs.recs[i]
	r.task, r.taskGen, r.op = t, gen, c.ioOp
	c.ioRec = i
	t.ioWorker.Store(w)
	c.ioRes, c.ioFlags = 0, 0
	sqe := w.io.getSQE()
	c.ioOp.Prep(sqe)
	sqe.UserData = userData(i, r.gen)
	w.io.pending++
	if w.io.pending >= w.rt.cfg.SubmitBatch {
		w.io.submit()
	}
}

// requestCancel asks worker w to cancel t's operation: Wake and cancellation
// race through claim for other waits, but an I/O wait may only end with its
// completion, so cancellation is a request the worker turns into an
// ASYNC_CANCEL.
func (w *worker) requestCancel(t *Task, gen uint64) {
	w.io.cancelMu.Lock()
	w.io.cancels = append(w.io.cancels, cancelRequest{t: t, gen: gen})
	w.io.cancelN.Add(1)
	w.io.cancelMu.Unlock()
	if w.parked.Load() {
		w.unpark()
	}
}

type cancelRequest struct {
	t   *Task
	gen uint64
}

// processCancels submits ASYNC_CANCEL for every requested cancellation
// whose operation is still in flight.
func (e *ioEngine) processCancels() {
	if e.cancelN.Load() == 0 {
		return
	}
	e.cancelMu.Lock()
	reqs := append(e.cancelScratch[:0], e.cancels...)
	clear(e.cancels)
	e.cancels = e.cancels[:0]
	for _, h := range e.timerCancels {
		e.w.wheel.Cancel(h)
	}
	e.timerCancels = e.timerCancels[:0]
	e.cancelN.Store(0)
	e.cancelMu.Unlock()
	for _, q := range reqs {
		// The task is suspended on this worker's ring until its
		// completion, so its coroutine's fields are stable here.
		s := q.t.wstate.Load()
		if s>>genShift != q.gen || s&stMask != stWaiting {
			continue
		}
		r := &e.recs.recs[q.t.coro.ioRec]
		if r.task != q.t || r.taskGen != q.gen || r.cancelled {
			continue
		}
		r.cancelled = true
		sqe := e.getSQE()
		sqe.PrepAsyncCancel(userData(q.t.coro.ioRec, r.gen), 0)
		sqe.UserData = cancelUserData
		e.pending++
	}
	clear(reqs)
	e.cancelScratch = reqs[:0]
	e.submit()
}

// completeIO hands a completion to the task waiting for it.
func (e *ioEngine) completeIO(cqe *uring.CQE) bool {
	i := int32(cqe.UserData >> recordGenBits)
	if i <= 0 || int(i) >= len(e.recs.recs) {
		return false
	}
	r := &e.recs.recs[i]
	if r.gen != uint32(cqe.UserData&recordGenMask) || r.task == nil {
		return false
	}
	t, gen := r.task, r.taskGen
	e.recs.release(i)
	// Store the result before publishing the wake-up: the claim hands the
	// task to whoever runs it next.
	c := t.coro
	c.ioRes, c.ioFlags, c.ioDone = cqe.Res, cqe.Flags, true
	to := uint64(stWoken)
	if t.wstate.Load()&stIOCancel != 0 {
		to = stCancelled
	}
	if won, _ := t.claim(gen, to); won {
		e.w.pushWoken(t)
		return true
	}
	return false
}

// requestTimerCancel asks the worker to remove a wheel entry it owns; the
// worker does so at its next drive (an entry it fires meanwhile finds its
// Waker stale and does nothing).
func (e *ioEngine) requestTimerCancel(h timerwheel.Handle) {
	e.cancelMu.Lock()
	e.timerCancels = append(e.timerCancels, h)
	e.cancelN.Add(1)
	e.cancelMu.Unlock()
}

// getSQE returns a free submission entry, submitting (and, if the kernel
// pushes back, reaping completions) until one is free: an operation waits
// for room, it never fails for lack of it.
func (e *ioEngine) getSQE() *uring.SQE {
	for tries := 0; ; tries++ {
		if sqe := e.ring.GetSQE(); sqe != nil {
			return sqe
		}
		e.submit()
		if sqe := e.ring.GetSQE(); sqe != nil {
			return sqe
		}
		// The kernel refused more work (EBUSY: too many completions
		// unreaped): reap, and after a few rounds wait for one.
		e.ring.ForEachCQE(e.reapFn)
		if tries > 3 {
			if _, err := e.ring.SubmitAndWaitTimeout(1, time.Millisecond); err != nil && !errors.Is(err, syscall.ETIME) {
				e.enterFailed(err)
			}
			e.ring.ForEachCQE(e.reapFn)
		}
	}
}

// submit hands the prepared entries to the kernel. A failure leaves them
// queued; the next submit retries them.
func (e *ioEngine) submit() {
	if e.ring == nil || e.ring.SQReady() == 0 {
		e.pending = 0
		return
	}
	n, err := e.ring.Submit()
	if n > 0 {
		e.w.stats.ioSubmitted.Add(uint64(n))
	}
	if err != nil {
		e.enterFailed(err)
		return
	}
	e.pending = int(e.ring.SQReady())
}
