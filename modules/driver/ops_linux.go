package driver

import (
	"errors"
	"syscall"
	"time"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// record is an operation in flight on a ring. Records live in a per-ring
// slab and are recycled; an OpID (the entry's UserData) is
// index<<recordGenBits | gen, so a late completion or cancellation for a
// recycled record is recognised and ignored.
type record[T any] struct {
	owner     T
	ownerGen  uint64
	op        Op // keeps op's memory reachable until the completion
	gen       uint32
	cancelled bool  // ASYNC_CANCEL submitted
	more      bool  // first holds the result; the last CQE is still to come
	refused   bool  // Prep asked for many completions: a NOP went instead (see start)
	recancels uint8 // times the cancel was asked again (see cancelAnswered)
	first     Result
	next      int32 // free list link
}

const (
	recordGenBits = 24
	recordGenMask = 1<<recordGenBits - 1
	// User data below firstRecord is reserved (wakeUserData).
	firstRecord = 1 << recordGenBits
)

// records is a ring's slab of in-flight records. Index 0 is never used,
// so no OpID collides with the reserved user data.
type records[T any] struct {
	recs     []record[T]
	free     int32 // head of the free list, 0 when empty
	inFlight int
}

func (s *records[T]) alloc() int32 {
	if s.free == 0 {
		if len(s.recs) == 0 {
			s.recs = append(s.recs, record[T]{})
		}
		s.recs = append(s.recs, record[T]{})
		s.free = int32(len(s.recs) - 1)
	}
	i := s.free
	s.free = s.recs[i].next
	s.recs[i].next = 0
	s.inFlight++
	return i
}

func (s *records[T]) release(i int32) {
	r := &s.recs[i]
	var zero T
	r.owner, r.op, r.cancelled, r.more, r.recancels, r.refused = zero, nil, false, false, 0, false
	r.gen = (r.gen + 1) & recordGenMask
	r.next = s.free
	s.free = i
	s.inFlight--
}

// lookup returns the live record id names, or nil.
func (s *records[T]) lookup(id OpID) (*record[T], int32) {
	i := int32(uint64(id) >> recordGenBits)
	if i <= 0 || int(i) >= len(s.recs) {
		return nil, 0
	}
	r := &s.recs[i]
	if r.gen != uint32(uint64(id)&recordGenMask) || r.op == nil {
		return nil, 0
	}
	return r, i
}

func opID(i int32, gen uint32) OpID { return OpID(uint64(i)<<recordGenBits | uint64(gen)) }

// Start prepares op on the ring for owner's suspension gen and returns its
// id; the entry is submitted with the next batch (at once when
// cfg.SubmitBatch entries are prepared, counting a socket entry as a
// socketShare-th of one, else at the next Reap or Wait). cfg.Done
// receives the completion. Start never fails for a full submission queue:
// it submits (and reaps) until an entry is free. It panics after Close.
func (r *Ring[T]) Start(op Op, owner T, gen uint64) OpID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.start(op, owner, gen)
}

// StartHeld is Start for an owner that publishes, after Start, something
// cfg.Done relies on (the runtime publishes the task's wait, which Done
// claims): the ring stays locked until the owner calls Unhold, so no
// peer's TryReap can hand op's completion to Done before. Between the two
// the owner must not use the ring.
func (r *Ring[T]) StartHeld(op Op, owner T, gen uint64) OpID {
	r.mu.Lock()
	held := false
	defer func() {
		if !held {
			r.mu.Unlock() // Start panicked (a closed ring)
		}
	}()
	id := r.start(op, owner, gen)
	held = true
	return id
}

// Unhold ends StartHeld's hold of the ring.
func (r *Ring[T]) Unhold() { r.mu.Unlock() }

// start is Start under mu.
func (r *Ring[T]) start(op Op, owner T, gen uint64) OpID {
	i := r.recs.alloc()
	rec := &r.recs.recs[i]
	rec.owner, rec.ownerGen, rec.op = owner, gen, op
	sqe := r.getSQE()
	op.Prep(sqe)
	// An Op is one request with one result, and its entry is its own.
	// Link flags would chain the next owner's unrelated entry behind it,
	// and CQESkipSuccess would suppress the completion its owner waits
	// for: both are cleared. A multishot request would post results a
	// record cannot hand back (accepted descriptors, provided buffers),
	// and would keep Submit waiting until it ends: a NOP goes in its
	// place, and the operation fails with EINVAL (see completeOp).
	sqe.Flags &^= uring.SQELink | uring.SQEIOHardlink | uring.SQECQESkipSuccess
	if sqe.Multishot() {
		sqe.PrepNop()
		rec.refused = true
	}
	id := opID(i, rec.gen)
	sqe.UserData = uint64(id)
	r.pending += entryWeight(sqe)
	if r.pending >= r.submitAt {
		r.submit()
	} else {
		r.setUnsubmitted(true)
	}
	return id
}

// socketShare is how many socket entries count as one entry towards
// RingConfig.SubmitBatch (see entryWeight).
const socketShare = 8

// entryWeight is what a prepared entry adds to Ring.pending, in
// socketShare-ths of an entry. A read or write of a file goes to a device
// that works while the worker runs its other tasks, so it is submitted
// early, with the next few. An entry that only a socket can take (send,
// receive, sendmsg, recvmsg, zero-copy send, accept) is done by the kernel
// on the spot, or parked on the socket until it can be: submitting it
// before the worker runs out of tasks, which it usually does within
// microseconds, gains little and costs an io_uring_enter. (Readv and
// writev count in full: files use them too.) Counting socket entries at an
// eighth, W7's server (64 echo connections, two workers) made 0.65
// io_uring_enter calls per round trip instead of 1.75, and in 3 same-run
// pairs W7 went from 1.24 to 1.15 against goroutines (server CPU 4.78 ->
// 4.30 us per round trip, p99 unchanged) and W7c from 1.26 to 1.18; W6d's
// O_DIRECT reads did not move.
//
// The price: up to socketShare*SubmitBatch-1 socket entries wait until
// the worker runs out of tasks or reaches its next IOInterval tick, so a
// worker held by a long task holds them too, as it holds its queued tasks.
func entryWeight(sqe *uring.SQE) int {
	switch sqe.Opcode {
	case uring.OpSend, uring.OpRecv, uring.OpSendZC, uring.OpSendmsg, uring.OpRecvmsg, uring.OpAccept:
		return 1
	}
	return socketShare
}

// Cancel asks the ring's worker to cancel operation id in the kernel
// (IORING_OP_ASYNC_CANCEL) at its next Reap; safe from any goroutine. The
// operation still ends with its own completion, reporting the
// cancellation or, if it finished first, its result. The caller wakes the
// worker if it sleeps: CancelPending reports queued requests.
func (r *Ring[T]) Cancel(id OpID) {
	r.cancelMu.Lock()
	r.cancels = append(r.cancels, id)
	r.cancelN.Add(1)
	r.cancelMu.Unlock()
}

// CancelPending reports whether Cancel requests wait for the worker; safe
// from any goroutine.
func (r *Ring[T]) CancelPending() bool { return r.cancelN.Load() > 0 }

// processCancels submits ASYNC_CANCEL for every requested cancellation
// whose operation is still in flight.
func (r *Ring[T]) processCancels() {
	if r.cancelN.Load() == 0 {
		return
	}
	r.cancelMu.Lock()
	ids := append(r.cancelScratch[:0], r.cancels...)
	r.cancels = r.cancels[:0]
	r.cancelN.Store(0)
	r.cancelMu.Unlock()
	for _, id := range ids {
		rec, _ := r.recs.lookup(id)
		if rec == nil || rec.cancelled {
			continue
		}
		rec.cancelled = true
		r.prepCancel(id)
	}
	r.cancelScratch = ids[:0]
	r.submit()
}

// prepCancel prepares the ASYNC_CANCEL of operation id.
func (r *Ring[T]) prepCancel(id OpID) {
	sqe := r.getSQE()
	sqe.PrepAsyncCancel(uint64(id), 0)
	sqe.UserData = cancelTag | uint64(id)
	r.pending += socketShare
}

// recancelDelays are how long a cancel the kernel could not carry out
// waits before it is asked again: 1 ms, doubling with each new ask up to
// 128 ms, so that an operation io-wq runs for long (a hung NFS read)
// costs a few entries a second, not a thousand.
const recancelDelays = 8

// cancelAnswered takes the kernel's answer res to the ASYNC_CANCEL of
// operation id. 0 says the operation was found and ended: its own
// completion follows. -EALREADY says an io-wq worker runs it: the worker
// was told to stop, but an operation on a socket or pipe (submitted with
// IOSQE_ASYNC, say) that the worker found not ready then arms a poll and
// waits for readiness for good; -ENOENT says the kernel did not find it.
// Either way, if the operation is still in flight the cancel is asked
// again after a delay (recancelDelays): it was asked once, and its wait
// never ended, nor Close with it (found by a reviewer: 1 to 5 of 3,000
// cancels of an IOSQE_ASYNC pipe read). The delay keeps an operation that
// runs in io-wq for a while (a disk read) from turning this into a busy
// loop. Not for a zero-copy send that waits for its notification (more):
// the send is done, and only the kernel's release of the buffer ends that
// wait, however often it is asked to cancel (it was asked every
// millisecond while a peer held the data; found by a reviewer).
func (r *Ring[T]) cancelAnswered(id OpID, res int32) {
	if res != -int32(syscall.EALREADY) && res != -int32(syscall.ENOENT) {
		return
	}
	if rec, _ := r.recs.lookup(id); rec != nil && rec.cancelled && !rec.more {
		r.recancelAfter = append(r.recancelAfter, id)
	}
}

// cancelAgain arms the timers of the cancels to ask again, and asks again
// those whose timer has fired and whose operation is still in flight. The
// completions a getSQE reaps may add to the lists while it runs.
func (r *Ring[T]) cancelAgain() {
	for len(r.recancelAfter) > 0 || len(r.recancel) > 0 {
		for len(r.recancel) > 0 {
			id := r.recancel[len(r.recancel)-1]
			r.recancel = r.recancel[:len(r.recancel)-1]
			if rec, _ := r.recs.lookup(id); rec != nil && rec.cancelled {
				r.prepCancel(id)
			}
		}
		for len(r.recancelAfter) > 0 {
			id := r.recancelAfter[len(r.recancelAfter)-1]
			r.recancelAfter = r.recancelAfter[:len(r.recancelAfter)-1]
			rec, _ := r.recs.lookup(id)
			if rec == nil {
				continue
			}
			i := min(int(rec.recancels), recancelDelays-1)
			rec.recancels = uint8(min(int(rec.recancels)+1, recancelDelays))
			if r.recancelTS[i] == (unix.Timespec{}) {
				r.recancelTS[i] = unix.NsecToTimespec(int64(time.Millisecond << i))
			}
			sqe := r.getSQE()
			sqe.PrepTimeout(&r.recancelTS[i], 0, 0)
			sqe.UserData = recancelTag | uint64(id)
			r.pending += socketShare
		}
	}
}

// completeOp hands a completion to its record's owner. An operation whose
// CQE says More (a zero-copy send, whose notification follows once the
// kernel has let go of the buffer) completes with its last CQE, reporting
// the first one's result: until then its record, and so its memory, stay.
func (r *Ring[T]) completeOp(cqe *uring.CQE) bool {
	rec, i := r.recs.lookup(OpID(cqe.UserData))
	if rec == nil {
		return false
	}
	res := Result{Res: cqe.Res, Flags: cqe.Flags}
	if rec.refused {
		res = Result{Res: -int32(syscall.EINVAL)}
	} else if cqe.Flags&uring.CQEFMore != 0 {
		if !rec.more {
			rec.more, rec.first = true, Result{Res: cqe.Res, Flags: cqe.Flags &^ uring.CQEFMore}
		}
		return false
	}
	if rec.more {
		res = rec.first
	}
	owner, gen := rec.owner, rec.ownerGen
	r.recs.release(i)
	return r.cfg.Done(owner, gen, res)
}

// getSQE returns a free submission entry, submitting (and, if the kernel
// pushes back, reaping completions) until one is free: an operation waits
// for room, it never fails for lack of it. On a closed ring, where no
// entry ever frees up, it panics.
func (r *Ring[T]) getSQE() *uring.SQE {
	for tries := 0; ; tries++ {
		if sqe := r.ring.GetSQE(); sqe != nil {
			return sqe
		}
		if r.ring.Fd() < 0 {
			panic("faio/driver: operation started on a closed ring")
		}
		r.submit()
		if sqe := r.ring.GetSQE(); sqe != nil {
			return sqe
		}
		// The kernel refused more work (EBUSY: too many completions
		// unreaped): reap, and after a few rounds wait for one.
		r.ring.ForEachCQE(r.reapFn)
		if tries > 3 {
			if _, err := r.ring.SubmitAndWaitTimeout(1, time.Millisecond); err != nil && !errors.Is(err, syscall.ETIME) {
				r.enterFailed(err)
			}
			r.ring.ForEachCQE(r.reapFn)
		}
	}
}

// submit hands the prepared entries to the kernel. A failure leaves them
// queued; the next submit retries them.
func (r *Ring[T]) submit() {
	if r.ring.SQReady() == 0 {
		r.pending = 0
		r.setUnsubmitted(false)
		return
	}
	n, err := submitEntries(r.ring)
	if n > 0 {
		r.submitted.Add(uint64(n))
	}
	if err != nil {
		r.enterFailed(err)
		// They wait for the next submit: Reap's look without the
		// lock (unsubmitted) and Stranded must see them.
		r.setUnsubmitted(r.ring.SQReady() > 0)
		return
	}
	// Entries the kernel did not take count in full, so that a Start
	// soon retries them; the next Reap does at the latest.
	left := r.ring.SQReady()
	r.pending = int(left) * socketShare
	r.setUnsubmitted(left > 0)
}

// setUnsubmitted records whether entries wait to be submitted, for
// Stranded; the store, a full barrier on amd64, happens only on a change.
func (r *Ring[T]) setUnsubmitted(v bool) {
	if r.unsubmitted.Load() != v {
		r.unsubmitted.Store(v)
	}
}
