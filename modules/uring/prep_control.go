package uring

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel reads a struct __kernel_timespec (two 64-bit fields) through
// the pointers below; unix.Timespec has that layout on 64-bit Linux only, so
// a 32-bit build fails here rather than handing the kernel garbage.
var (
	_ [unsafe.Sizeof(unix.Timespec{}) - 16]byte
	_ [16 - unsafe.Sizeof(unix.Timespec{})]byte
)

// PrepTimeout prepares a timeout that completes with -ETIME when ts elapses
// (ts is relative unless flags has TimeoutAbs), or with 0 once count other
// requests have completed (count 0: only the timer counts). The kernel reads
// ts when it consumes the SQE; keep it referenced until the CQE anyway, as
// with every pointer handed to the ring.
func (s *SQE) PrepTimeout(ts *unix.Timespec, count uint32, flags uint32) {
	s.prepPtr(OpTimeout, -1, unsafe.Pointer(ts), 1, uint64(count))
	s.OpFlags = flags
}

// PrepTimeoutRemove cancels the timeout whose user_data is userData; that
// timeout completes with -ECANCELED, this request with 0 or -ENOENT when no
// such timeout is armed (-EALREADY if it is already firing).
func (s *SQE) PrepTimeoutRemove(userData uint64, flags uint32) {
	s.prep(OpTimeoutRemove, -1, userData, 0, 0)
	s.OpFlags = flags
}

// PrepTimeoutUpdate re-arms the timeout whose user_data is userData with ts
// (a linked timeout when flags has LinkTimeoutUpdate). Keep ts referenced
// until this request's CQE.
func (s *SQE) PrepTimeoutUpdate(ts *unix.Timespec, userData uint64, flags uint32) {
	escapeToHeap(unsafe.Pointer(ts))
	s.prep(OpTimeoutRemove, -1, userData, 0, uint64(uintptr(unsafe.Pointer(ts))))
	s.OpFlags = flags | TimeoutUpdate
}

// PrepLinkTimeout prepares a timeout for the request before it, which must
// carry SQELink: if that request has not completed when ts elapses it is
// cancelled (it completes with -ECANCELED, this one with -ETIME); if it
// completes first, this one completes with -ECANCELED. Keep ts referenced
// until this request's CQE.
func (s *SQE) PrepLinkTimeout(ts *unix.Timespec, flags uint32) {
	s.prepPtr(OpLinkTimeout, -1, unsafe.Pointer(ts), 1, 0)
	s.OpFlags = flags
}

// PrepAsyncCancel cancels the request whose user_data is userData (every
// such request with CancelAll). The cancelled request completes with
// -ECANCELED (or its own result if it finished first); this one with 0 (the
// count with CancelAll), -ENOENT if nothing matched, or -EALREADY if the
// target is running and was only signalled. Either way the caller must
// still wait for the target's own CQE before reusing its buffers.
func (s *SQE) PrepAsyncCancel(userData uint64, flags uint32) {
	s.prep(OpAsyncCancel, -1, userData, 0, 0)
	s.OpFlags = flags
}

// PrepAsyncCancelFd cancels requests on file descriptor fd (the first match,
// every match with CancelAll; a registered-file index with CancelFdFixed).
// Results are as for PrepAsyncCancel.
func (s *SQE) PrepAsyncCancelFd(fd int, flags uint32) {
	s.prep(OpAsyncCancel, fd, 0, 0, 0)
	s.OpFlags = flags | CancelFd
}

// PrepPollAdd waits until fd is ready for events (unix.POLLIN ...); the
// result is the ready mask. It is one-shot: see PrepPollMultishot.
func (s *SQE) PrepPollAdd(fd int, events uint32) {
	s.prep(OpPollAdd, fd, 0, 0, 0)
	s.OpFlags = pollMask(events)
}

// PrepPollMultishot is PrepPollAdd that stays armed, posting a CQE with More
// set each time fd becomes ready, until removed with PrepPollRemove.
func (s *SQE) PrepPollMultishot(fd int, events uint32) {
	s.PrepPollAdd(fd, events)
	s.Len = PollAddMulti
}

// PrepPollRemove removes the poll whose user_data is userData; it completes
// with -ECANCELED, this request with 0 or -ENOENT.
func (s *SQE) PrepPollRemove(userData uint64) {
	s.prep(OpPollRemove, -1, userData, 0, 0)
}
