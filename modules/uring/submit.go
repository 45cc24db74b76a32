package uring

import (
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory ordering with the kernel. The rings are single-producer,
// single-consumer queues shared with the kernel, and the ABI fixes four
// synchronisation points (the kernel side uses smp_load_acquire and
// smp_store_release at the mirror points):
//
//   - SQ tail, store-release (flushSQ): the SQEs we wrote must be visible
//     before the kernel sees the new tail and reads them.
//   - SQ head, load-acquire (GetSQE, SQReady, flushSQ): the kernel has
//     finished reading an SQE before we see the head move past it and
//     overwrite the slot. With SQPOLL the kernel thread really runs
//     concurrently; without it the head only moves inside io_uring_enter,
//     but the same load is correct and costs nothing extra.
//   - CQ tail, load-acquire (CQReady, peek): a CQE is fully written before
//     we see the tail move past it.
//   - CQ head, store-release (CQAdvance): we have finished reading a CQE
//     before the kernel sees the head move past it and reuses the slot.
//
// sync/atomic operations are sequentially consistent, which is at least as
// strong as each of these. The SQ flags word is also read atomically: with
// SQPOLL the tail store must not be reordered after the read of
// sqNeedWakeup, or we could miss that the poll thread went to sleep
// (liburing needs a full barrier there; a sequentially consistent store
// followed by a load gives it).

// ErrTimeout is returned when a wait ends before enough completions arrived.
// It unwraps to syscall.ETIME, so errors.Is(err, syscall.ETIME) also works.
var ErrTimeout error = &Error{Op: "wait", Errno: syscall.ETIME}

// internalUserData marks the timeout SQEs WaitCQE arms on kernels without
// FeatExtArg; the reaping methods consume their CQEs silently.
const internalUserData = ^uint64(0)

// GetSQE returns the next free submission entry, zeroed, or nil when the SQ
// is full (submit, then retry) or the ring is closed. The entry is
// published to the kernel by the next Submit; see SQE for how long the
// pointer stays valid.
func (r *Ring) GetSQE() *SQE {
	if !r.open {
		return nil
	}
	sq := &r.sq
	if sq.tail-atomic.LoadUint32(sq.khead) >= sq.entries {
		return nil
	}
	sqe := &sq.sqes[sq.tail&sq.mask]
	sq.tail++
	*sqe = SQE{}
	return sqe
}

// SQReady returns how many entries have been taken with GetSQE and not yet
// consumed by the kernel (0 on a closed ring).
func (r *Ring) SQReady() uint32 {
	if !r.open {
		return 0
	}
	return r.sq.tail - atomic.LoadUint32(r.sq.khead)
}

// SQSpace returns how many more entries GetSQE can hand out before the SQ
// is full (0 on a closed ring).
func (r *Ring) SQSpace() uint32 {
	if !r.open {
		return 0
	}
	return r.sq.entries - r.SQReady()
}

// flushSQ publishes the entries handed out since the last flush. It returns
// how many entries the kernel has yet to consume and how many this call
// published.
func (r *Ring) flushSQ() (pending, published uint32) {
	sq := &r.sq
	if sq.tail != sq.pubTail {
		published = sq.tail - sq.pubTail
		atomic.StoreUint32(sq.ktail, sq.tail) // store-release of the SQ tail
		sq.pubTail = sq.tail
	}
	return sq.tail - atomic.LoadUint32(sq.khead), published
}

// cqNeedsEnter reports whether completions may be waiting inside the kernel
// rather than in the CQ ring: held back after an overflow, deferred task
// work announced by SetupTaskrunFlag, or any completion of an IOPOLL ring,
// which the kernel reaps only when asked.
func (r *Ring) cqNeedsEnter() bool {
	f := atomic.LoadUint32(r.sq.kflags)
	if f&sqCQOverflow != 0 {
		r.backlogs++
	}
	return r.flags&SetupIOPoll != 0 || f&(sqCQOverflow|sqTaskrun) != 0
}

// rawEnterMax is the largest batch that enter submits with a raw system
// call, and rawLenMax the largest buffer a data entry of such a batch may
// carry (see enter).
const (
	rawEnterMax = 32
	rawLenMax   = 64 << 10
)

// enter makes the io_uring_enter system call. A call that waits for no
// completion and no SQ room, and whose entries are all light (lightSQE),
// at most rawEnterMax of them, is made without the scheduler's
// entersyscall/exitsyscall bookkeeping: about 100-170 ns a call, which is
// the cost of a submission's whole return trip on a busy ring (W7c's
// server spent 0.96x the CPU of Go's net per round trip with it and 1.18x
// without).
//
// A raw call keeps its P, cannot be preempted and holds up a collection's
// stop-the-world until it returns, so it is only for work that is bounded
// and never waits: the kernel tries each light entry without blocking,
// copies at most rawLenMax bytes for it, and hands what would block to its
// workers. Everything else (an open, which runs the filesystem's open and
// may wait on a FUSE server in this very process; a close, whose socket
// teardown may linger; a connect, which may search long for a port;
// vectored and large transfers) goes through the scheduler, which hands
// the P on if the call takes long. Completions' deferred retries, which
// the kernel runs on the way out of any call, copy at most their own
// buffer and never wait either.
func (r *Ring) enter(toSubmit, minComplete, flags uint32, arg unsafe.Pointer, argSize uintptr) (int, syscall.Errno) {
	if minComplete == 0 && flags&enterSQWait == 0 && toSubmit <= rawEnterMax && r.lightBatch(toSubmit) {
		n, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), uintptr(arg), argSize)
		return int(n), errno
	}
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), uintptr(arg), argSize)
	return int(n), errno
}

// lightBatch reports whether the next n entries the kernel consumes are
// all light (the SQ array maps slot i to entry i).
func (r *Ring) lightBatch(n uint32) bool {
	sq := &r.sq
	head := atomic.LoadUint32(sq.khead)
	for i := range n {
		if !lightSQE(&sq.sqes[(head+i)&sq.mask]) {
			return false
		}
	}
	return true
}

// lightSQE reports whether the kernel's inline attempt at e is bounded
// work that never sleeps: an entry sent straight to the async workers, a
// control operation (nop, poll, timeout, cancel, message, accept,
// shutdown), or a plain read, write, send or receive of at most rawLenMax
// bytes. A receive that selects a provided buffer copies at most that
// buffer.
func lightSQE(e *SQE) bool {
	if e.Flags&SQEAsync != 0 {
		return true
	}
	switch e.Opcode {
	case OpNop, OpPollAdd, OpPollRemove, OpTimeout, OpTimeoutRemove, OpAsyncCancel,
		OpLinkTimeout, OpMsgRing, OpAccept, OpShutdown:
		return true
	case OpRead, OpWrite, OpReadFixed, OpWriteFixed, OpSend, OpRecv, OpSendZC:
		return e.Len <= rawLenMax
	}
	return false
}

// Submit hands the prepared entries to the kernel without waiting and
// returns how many it consumed (with SetupSQPoll: how many were published
// for the poll thread). It makes no system call when there is nothing to
// submit and no completion to flush. The count is short when an entry
// fails to prepare (unless SetupSubmitAll): that entry's error arrives as
// its CQE and the entries after it stay queued for the next Submit. If the
// kernel reports lost completions the count comes with an *OverflowError.
func (r *Ring) Submit() (int, error) {
	return r.submitAndWait(0, -1)
}

// SubmitAndWait submits like Submit, then blocks until at least waitNr
// completions are ready in the CQ. Interruptions by signals are retried.
// A waitNr above the CQ size waits for a full CQ, as the kernel does:
// completions beyond it are held back until the CQ is reaped.
func (r *Ring) SubmitAndWait(waitNr uint32) (int, error) {
	return r.submitAndWait(waitNr, -1)
}

// SubmitAndWaitTimeout submits like Submit, then waits up to timeout for at
// least waitNr completions to be ready. If they are not ready in time it
// returns the count submitted and ErrTimeout (errors.Is(err,
// syscall.ETIME)); whatever did complete stays in the CQ. A negative timeout
// waits forever; zero does not wait at all (ErrTimeout if fewer than waitNr
// are ready already). Without FeatExtArg the timeout uses an internal
// timeout SQE, which needs one free SQ slot.
func (r *Ring) SubmitAndWaitTimeout(waitNr uint32, timeout time.Duration) (int, error) {
	return r.submitAndWait(waitNr, timeout)
}

func (r *Ring) submitAndWait(waitNr uint32, timeout time.Duration) (int, error) {
	if !r.open {
		return 0, ErrClosed
	}
	// More than the CQ holds can never be ready in it; the kernel caps its
	// own wait the same way, so a larger count would only spin.
	waitNr = min(waitNr, r.cq.entries)
	var deadline time.Time
	if waitNr > 0 && timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	sqpoll, iopoll := r.flags&SetupSQPoll != 0, r.flags&SetupIOPoll != 0
	submitted, armed, expired := 0, 0, false
	emptyPolls := 0 // IOPOLL rounds in a row that submitted and reaped nothing
	for {
		block := waitNr > 0 && timeout != 0 && r.userReady() < waitNr
		var remaining time.Duration
		if block && timeout > 0 {
			if remaining = time.Until(deadline); remaining <= 0 {
				// Out of time, perhaps before the first round: still
				// submit what is queued, as a zero timeout does.
				block, expired = false, true
			}
		}
		var arg unsafe.Pointer
		var argSize uintptr
		var flags, minComplete uint32
		if block {
			flags, minComplete = enterGetEvents, waitNr
			if timeout > 0 {
				if r.features&FeatExtArg != 0 {
					r.waitTS = unix.NsecToTimespec(int64(remaining))
					arg, argSize, flags = unsafe.Pointer(&r.waitArg), getEventsArgSize, flags|enterExtArg
				} else if r.armWaitTimeout(waitNr, remaining) {
					armed++
				} else {
					// No SQ slot for the timeout: submit what is queued
					// without blocking (with SQPOLL, wait for the poll
					// thread to make room) and try again.
					flags, minComplete = 0, 0
					if sqpoll {
						flags = enterSQWait
					}
				}
			}
		} else if r.cqNeedsEnter() {
			flags = enterGetEvents
		}
		pending, published := r.flushSQ()
		toSubmit := pending
		if sqpoll {
			submitted += int(published)
			toSubmit = 0
			if pending > 0 && atomic.LoadUint32(r.sq.kflags)&sqNeedWakeup != 0 {
				flags |= enterSQWakeup
			}
		}
		if toSubmit == 0 && flags == 0 {
			break
		}
		var readyBefore uint32
		if iopoll && block {
			readyBefore = r.userReady()
		}
		n, errno := r.enter(toSubmit, minComplete, flags, arg, argSize)
		timedOut := false
		switch errno {
		case 0:
			if !sqpoll {
				submitted += n
			}
			if iopoll && block {
				// An IOPOLL ring's kernel does not sleep: with nothing
				// on its poll list it returns at once, and a wait with
				// nothing in flight went round at 100% CPU for good
				// (found by a reviewer). A run of empty rounds backs
				// off, from 1 µs up to 1 ms, as a sleeping wait would
				// cost nothing; completions that do come are polled
				// for at once before it.
				if n == 0 && r.userReady() == readyBefore {
					emptyPolls++
				} else {
					emptyPolls = 0
				}
				if emptyPolls > iopollSpins {
					time.Sleep(min(time.Microsecond<<min(emptyPolls-iopollSpins, 10), time.Millisecond))
				}
			}
		case unix.EINTR:
			// Go's preemption signal; nothing was lost, go round again.
			continue
		case unix.ETIME:
			timedOut = true
		case unix.EBADR:
			// The kernel dropped completions and says so once.
			return r.result(submitted, armed, &OverflowError{Dropped: r.takeDropped()})
		default:
			return r.result(submitted, armed, sysError("io_uring_enter", errno))
		}
		if waitNr == 0 || r.userReady() >= waitNr {
			break
		}
		if timeout == 0 || timedOut || expired {
			return r.result(submitted, armed, ErrTimeout)
		}
		// Woken early (a signal after some entries were submitted, or a
		// partial submission): go round with the time that is left.
	}
	if waitNr > 0 && r.userReady() < waitNr {
		// Left without entering the kernel: a zero or spent timeout.
		return r.result(submitted, armed, ErrTimeout)
	}
	return r.result(submitted, armed, nil)
}

// iopollSpins is how many empty rounds in a row a wait on an IOPOLL ring
// makes before it backs off.
const iopollSpins = 64

// result builds submitAndWait's results: the count without the internal
// timeout SQEs it armed, and err, or else a report of completions the
// kernel dropped since the last report.
func (r *Ring) result(submitted, armed int, err error) (int, error) {
	submitted = max(submitted-armed, 0)
	if err != nil {
		return submitted, err
	}
	return submitted, r.checkOverflow()
}

// armWaitTimeout queues an internal timeout SQE that completes after d or
// once waitNr completions were posted, so that io_uring_enter wakes up
// without FeatExtArg. The timespec lives in a slot owned by the SQE's index,
// which the kernel has read by the time that slot is handed out again.
func (r *Ring) armWaitTimeout(waitNr uint32, d time.Duration) bool {
	sqe := r.GetSQE()
	if sqe == nil {
		return false
	}
	ts := &r.timeoutTS[(r.sq.tail-1)&r.sq.mask]
	*ts = unix.NsecToTimespec(int64(d))
	sqe.PrepTimeout(ts, waitNr, 0)
	sqe.UserData = internalUserData
	r.internalPending++
	return true
}
