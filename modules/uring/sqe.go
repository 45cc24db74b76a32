package uring

import (
	"math"
	"unsafe"
)

// SQE is a submission queue entry, laid out exactly as struct io_uring_sqe
// (64 bytes). GetSQE returns a pointer into the ring shared with the kernel;
// fill it with one Prep method, then SetUserData and SetFlags. The pointer
// is valid until the next Submit, SubmitAndWait or WaitCQE call (which hand
// the entry to the kernel) and must not be used after Close.
//
// Field names follow the kernel; fields that the kernel overlays with a
// union carry the most common name, and the Prep methods document which
// meaning they use.
type SQE struct {
	Opcode      Op     // operation
	Flags       uint8  // SQE* flags
	IoPrio      uint16 // I/O priority, or per-op flags (multishot accept/recv)
	Fd          int32  // file descriptor, or registered-file index with SQEFixedFile
	Off         uint64 // file offset; addr2 for some ops
	Addr        uint64 // buffer, iovec array, path, sockaddr or target user_data
	Len         uint32 // buffer length, iovec count, mode, ...
	OpFlags     uint32 // per-op flags: rw, fsync, timeout, accept, cancel, open, statx, msg
	UserData    uint64 // returned unchanged in the CQE
	BufIndex    uint16 // registered buffer index, or provided-buffer group
	Personality uint16 // credentials registered with the ring; 0 = the submitter's
	SpliceFdIn  int32  // splice input fd; file_index for direct descriptors
	Addr3       uint64 // extra address for a few ops
	_           uint64 // reserved; must stay zero
}

// Compile-time layout checks: the kernel reads this memory directly.
var (
	_ [unsafe.Sizeof(SQE{}) - 64]byte
	_ [64 - unsafe.Sizeof(SQE{})]byte
)

// SetUserData sets the value the kernel returns in this entry's CQE. The
// value ^uint64(0) is reserved for the ring's own timeout entries (see
// WaitCQE) and must not be used.
func (s *SQE) SetUserData(u uint64) { s.UserData = u }

// SetFlags replaces the SQE* flags (SQELink, SQEDrain, SQEAsync,
// SQEFixedFile ...). Call it after the Prep method, which clears them.
func (s *SQE) SetFlags(f uint8) { s.Flags = f }

// Multishot reports whether the prepared entry asks the kernel for more than
// one completion: a multishot accept, receive or poll, a multishot timeout,
// or an opcode this package does not know (IORING_OP_READ_MULTISHOT, which
// follows the last one it knows, is one). Such a request stays armed until
// a completion without More, so whoever submits it must handle every one
// of its completions. A zero-copy send is not counted: its second CQE, the
// notification, belongs to the same result.
func (s *SQE) Multishot() bool {
	switch op := s.Opcode; {
	case op == OpAccept:
		return s.IoPrio&acceptMultishot != 0
	case op == OpRecv || op == OpRecvmsg:
		return s.IoPrio&recvMultishot != 0
	case op == OpPollAdd:
		return s.Len&PollAddMulti != 0
	case op == OpTimeout:
		return s.OpFlags&timeoutMultishot != 0
	default:
		return op > OpSendmsgZC
	}
}

// maxRW is the largest transfer Linux performs in one read or write
// (MAX_RW_COUNT); longer buffers are clamped to it, giving a short transfer
// the caller already has to handle.
const maxRW = math.MaxInt32 &^ 4095

// prep resets the entry to one operation, as liburing's io_uring_prep_rw
// does, so that stale fields from an earlier use cannot leak into it.
func (s *SQE) prep(op Op, fd int, addr uint64, n uint32, off uint64) {
	*s = SQE{Opcode: op, Fd: fdField(fd), Off: off, Addr: addr, Len: n}
}

// fdField is fd as the entry's 32-bit field: one outside int32's range
// becomes -1, which the kernel refuses with EBADF. Truncated, 1<<32|p
// named descriptor p, and the request ran on it (found by a reviewer).
func fdField(fd int) int32 {
	if fd < math.MinInt32 || fd > math.MaxInt32 {
		return -1
	}
	return int32(fd)
}

// prepPtr is prep for an op whose Addr is caller memory the kernel will use.
// escapeToHeap makes the compiler place that memory on the heap, where it
// never moves; keeping it reachable until the CQE is the caller's job.
func (s *SQE) prepPtr(op Op, fd int, p unsafe.Pointer, n uint32, off uint64) {
	escapeToHeap(p)
	s.prep(op, fd, uint64(uintptr(p)), n, off)
}

// bufAddr returns the address and clamped length of b.
func bufAddr(b []byte) (unsafe.Pointer, uint32) {
	n := len(b)
	if n > maxRW {
		n = maxRW
	}
	return unsafe.Pointer(unsafe.SliceData(b)), uint32(n)
}

// escapeSink is never written (enabled is always false), but the compiler
// cannot know that, so a pointer passed to escapeToHeap is treated as
// escaping. A buffer the kernel writes into asynchronously must not live on
// a goroutine stack, which the runtime moves when it grows.
var escapeSink struct {
	enabled bool
	p       unsafe.Pointer
}

func escapeToHeap(p unsafe.Pointer) {
	if escapeSink.enabled {
		escapeSink.p = p
	}
}

// bigEndian is true on architectures where the kernel expects the 32-bit
// poll mask with its 16-bit halves swapped (poll32_events is "word-reversed
// for BE" in the ABI).
var bigEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 0
}()

func pollMask(events uint32) uint32 {
	if bigEndian {
		return events<<16 | events>>16
	}
	return events
}
