package uring

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DefaultEntries is the SQ size New uses when neither its entries argument
// nor Params.Entries asks for one.
const DefaultEntries = 256

// MaxEntries is the largest SQ size the kernel accepts (IORING_MAX_ENTRIES);
// larger requests fail with EINVAL unless Params.Flags has SetupClamp.
const MaxEntries = 32768

// Params configures New and reports what the kernel set up. The zero value
// (or a nil *Params) asks for a plain ring with the kernel's defaults.
type Params struct {
	// Entries is the SQ size to request when New's entries argument is 0.
	// On return it holds the SQ size the kernel chose (a power of two).
	Entries uint32
	// CQEntries, if non-zero, requests a CQ of this size (SetupCQSize is
	// added to Flags); otherwise the kernel makes it twice the SQ size. On
	// return it holds the CQ size the kernel chose.
	CQEntries uint32
	// Flags are Setup* flags, passed to the kernel unchanged (apart from
	// SetupCQSize above). SetupSQE128, SetupCQE32 and every flag this
	// package does not define are refused (ErrNotSupported): later ones
	// change the ring layout it maps (IORING_SETUP_NO_SQARRAY,
	// IORING_SETUP_CQE_MIXED, IORING_SETUP_NO_MMAP ...).
	Flags uint32
	// SQThreadCPU is the CPU the SQ poll thread is pinned to (with
	// SetupSQPoll|SetupSQAff).
	SQThreadCPU uint32
	// SQThreadIdle is how long, in milliseconds, the SQ poll thread spins
	// without work before it sleeps (with SetupSQPoll).
	SQThreadIdle uint32
	// WQFd is the ring whose async workers to share (with SetupAttachWQ).
	WQFd uint32
	// Features is filled by New with the kernel's Feat* bits.
	Features uint32
}

// kernelParams is struct io_uring_params.
type kernelParams struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFd         uint32
	resv         [3]uint32
	sqOff        sqRingOffsets
	cqOff        cqRingOffsets
}

// sqRingOffsets is struct io_sqring_offsets.
type sqRingOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	resv2                                                           uint64
}

// cqRingOffsets is struct io_cqring_offsets.
type cqRingOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	resv2                                                           uint64
}

var (
	_ [unsafe.Sizeof(kernelParams{}) - 120]byte
	_ [120 - unsafe.Sizeof(kernelParams{})]byte
)

// Ring is one io_uring instance: a submission queue (SQ) the program fills
// and the kernel drains, and a completion queue (CQ) the kernel fills and the
// program drains, both in memory shared with the kernel.
//
// A Ring is not safe for concurrent use: one goroutine owns it, prepares and
// submits entries and reaps completions. It starts no goroutines.
type Ring struct {
	fd       int
	flags    uint32
	features uint32
	// open is true from New to Close: a zero Ring (not from New) is
	// refused as a closed one, where it dereferenced its nil queues.
	open bool

	sq submissionQueue
	cq completionQueue

	// Mappings, released by Close. cqMap is nil with FeatSingleMmap, where
	// both rings live in sqMap.
	sqMap, cqMap, sqeMap          unsafe.Pointer
	sqMapLen, cqMapLen, sqeMapLen uintptr

	overflowSeen    uint32 // kernel drop counter value already reported
	backlogs        uint64 // times completions were found held back in the kernel
	internalPending int    // armed wait timeouts whose CQE is not reaped yet

	// Arguments io_uring_enter reads during a timed wait. waitArg.ts holds
	// the address of waitTS: both live in this heap object, which does not
	// move and is reachable for as long as the ring is used.
	waitArg getEventsArg
	waitTS  unix.Timespec
	// One timespec per SQ slot for the wait timeouts of kernels without
	// FeatExtArg (see armWaitTimeout).
	timeoutTS []unix.Timespec

	// Every buffer ever registered, kept reachable for the ring's life:
	// a request in flight may write into one after it is unregistered
	// or the ring is closed (see UnregisterBuffers).
	buffers [][]byte
	regArg  int32 // scratch argument for register calls, so they allocate nothing
}

// getEventsArg is struct io_uring_getevents_arg.
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	pad       uint32
	ts        uint64
}

// submissionQueue holds pointers into the SQ ring mapping plus the
// program's private tail.
type submissionQueue struct {
	khead    *uint32 // advanced by the kernel as it consumes entries
	ktail    *uint32 // advanced by us to publish entries
	kflags   *uint32 // sq* flags, set by the kernel
	kdropped *uint32 // invalid entries the kernel skipped
	mask     uint32
	entries  uint32
	sqes     []SQE
	tail     uint32 // next entry GetSQE hands out; published by flushSQ
	pubTail  uint32 // last value stored to *ktail
}

// completionQueue holds pointers into the CQ ring mapping plus the
// program's private head.
type completionQueue struct {
	khead     *uint32 // advanced by us to release entries
	ktail     *uint32 // advanced by the kernel as it posts entries
	koverflow *uint32 // completions the kernel had to drop
	kflags    *uint32 // cq* flags, set by us (nil: the kernel has none)
	mask      uint32
	entries   uint32
	cqes      []CQE
	head      uint32 // our copy of *khead; only we write it
}

// New creates a ring with entries SQ entries (rounded up to a power of two
// by the kernel; 0 means p.Entries, or DefaultEntries) and maps its queues.
// p may be nil. On success p, if non-nil, is updated with the sizes and
// features the kernel chose.
//
// Errors are *Error values naming the cause: ENOSYS (no io_uring, also
// matching ErrNotSupported), EPERM (disabled by sysctl or seccomp), ENOMEM
// (RLIMIT_MEMLOCK), EINVAL (bad sizes or flags).
func New(entries uint32, p *Params) (*Ring, error) {
	var want Params
	if p != nil {
		want = *p
	}
	if entries == 0 {
		entries = want.Entries
	}
	if entries == 0 {
		entries = DefaultEntries
	}
	if bad := want.Flags & (setupUnsupportedBy | ^setupKnown); bad != 0 {
		return nil, errors.Join(ErrNotSupported, fmt.Errorf("faio/uring: setup flags %#x change the ring layout this binding uses", bad))
	}
	kp := kernelParams{
		flags:        want.Flags,
		sqThreadCPU:  want.SQThreadCPU,
		sqThreadIdle: want.SQThreadIdle,
		wqFd:         want.WQFd,
	}
	if want.CQEntries != 0 {
		kp.flags |= SetupCQSize
		kp.cqEntries = want.CQEntries
	}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&kp)), 0)
	if errno != 0 {
		return nil, setupError(errno, kp.flags)
	}
	r := &Ring{fd: int(fd), flags: kp.flags, features: kp.features, open: true}
	if err := r.mapRings(&kp); err != nil {
		r.unmap()
		unix.Close(r.fd)
		return nil, err
	}
	if p != nil {
		p.Entries = kp.sqEntries
		p.CQEntries = kp.cqEntries
		p.Flags = kp.flags
		p.Features = kp.features
	}
	return r, nil
}

// mapRings maps the SQ ring, CQ ring and SQE array and points the queue
// structs into them.
func (r *Ring) mapRings(kp *kernelParams) error {
	r.sqMapLen = uintptr(kp.sqOff.array) + uintptr(kp.sqEntries)*4
	r.cqMapLen = uintptr(kp.cqOff.cqes) + uintptr(kp.cqEntries)*unsafe.Sizeof(CQE{})
	single := kp.features&FeatSingleMmap != 0
	if single {
		// One mapping serves both rings; it must cover the larger.
		r.sqMapLen = max(r.sqMapLen, r.cqMapLen)
		r.cqMapLen = 0
	}
	var err error
	if r.sqMap, err = r.mmap(offSQRing, r.sqMapLen); err != nil {
		return err
	}
	cqBase := r.sqMap
	if !single {
		if r.cqMap, err = r.mmap(offCQRing, r.cqMapLen); err != nil {
			return err
		}
		cqBase = r.cqMap
	}
	r.sqeMapLen = uintptr(kp.sqEntries) * unsafe.Sizeof(SQE{})
	if r.sqeMap, err = r.mmap(offSQEs, r.sqeMapLen); err != nil {
		return err
	}

	at := func(base unsafe.Pointer, off uint32) *uint32 { return (*uint32)(unsafe.Add(base, off)) }
	sq := &r.sq
	sq.khead = at(r.sqMap, kp.sqOff.head)
	sq.ktail = at(r.sqMap, kp.sqOff.tail)
	sq.kflags = at(r.sqMap, kp.sqOff.flags)
	sq.kdropped = at(r.sqMap, kp.sqOff.dropped)
	sq.mask = *at(r.sqMap, kp.sqOff.ringMask)
	sq.entries = *at(r.sqMap, kp.sqOff.ringEntries)
	sq.sqes = unsafe.Slice((*SQE)(r.sqeMap), kp.sqEntries)
	sq.tail = *sq.ktail
	sq.pubTail = sq.tail
	// The SQ ring holds indexes into the SQE array. Mapping slot i to SQE i
	// once, here, means publishing entries is a single tail store.
	array := unsafe.Slice(at(r.sqMap, kp.sqOff.array), kp.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}

	cq := &r.cq
	cq.khead = at(cqBase, kp.cqOff.head)
	cq.ktail = at(cqBase, kp.cqOff.tail)
	cq.koverflow = at(cqBase, kp.cqOff.overflow)
	if kp.cqOff.flags != 0 {
		// Linux 5.8+; older kernels leave the offset 0.
		cq.kflags = at(cqBase, kp.cqOff.flags)
	}
	cq.mask = *at(cqBase, kp.cqOff.ringMask)
	cq.entries = *at(cqBase, kp.cqOff.ringEntries)
	cq.cqes = unsafe.Slice((*CQE)(unsafe.Add(cqBase, kp.cqOff.cqes)), kp.cqEntries)
	cq.head = *cq.khead
	r.overflowSeen = *cq.koverflow

	r.waitArg.sigmaskSz = sigsetSize
	r.waitArg.ts = uint64(uintptr(unsafe.Pointer(&r.waitTS)))
	if r.features&FeatExtArg == 0 {
		r.timeoutTS = make([]unix.Timespec, kp.sqEntries)
	}
	return nil
}

func (r *Ring) mmap(off int64, length uintptr) (unsafe.Pointer, error) {
	p, err := unix.MmapPtr(r.fd, off, nil, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			return nil, err
		}
		e := &Error{Op: "mmap", Errno: errno}
		if errno == unix.ENOMEM || errno == unix.EAGAIN {
			e.Hint = "out of locked memory: raise RLIMIT_MEMLOCK (ulimit -l" + memlockLimit() + ") or use fewer entries"
		}
		return nil, e
	}
	return p, nil
}

// unmap releases whatever mappings exist and forgets every pointer into
// them, so no later call can touch unmapped memory.
func (r *Ring) unmap() error {
	var first error
	for _, m := range []struct {
		p *unsafe.Pointer
		n uintptr
	}{{&r.sqeMap, r.sqeMapLen}, {&r.cqMap, r.cqMapLen}, {&r.sqMap, r.sqMapLen}} {
		if *m.p == nil {
			continue
		}
		if err := unix.MunmapPtr(*m.p, m.n); err != nil && first == nil {
			first = err
		}
		*m.p = nil
	}
	r.sq = submissionQueue{}
	r.cq = completionQueue{}
	return first
}

// Close unmaps the queues and closes the ring. The kernel then cancels
// requests still in flight, asynchronously: memory they use may still be
// written after Close returns, so cancel and reap every request that uses
// caller memory before closing. Close is idempotent; after it every other
// method fails with ErrClosed (or returns nil/0 where it has no error).
func (r *Ring) Close() error {
	if !r.open {
		return nil
	}
	r.open = false
	err := r.unmap()
	if cerr := unix.Close(r.fd); cerr != nil && err == nil {
		err = cerr
	}
	r.fd = -1
	r.timeoutTS = nil
	return err
}

// Fd returns the ring's file descriptor (-1 after Close), for polling it or
// sharing its workers through Params.WQFd.
func (r *Ring) Fd() int { return r.fd }

// Features returns the kernel's Feat* bits for this ring.
func (r *Ring) Features() uint32 { return r.features }

// Flags returns the Setup* flags the ring was created with.
func (r *Ring) Flags() uint32 { return r.flags }

// SQEntries returns the SQ size (0 after Close).
func (r *Ring) SQEntries() uint32 { return r.sq.entries }

// CQEntries returns the CQ size (0 after Close).
func (r *Ring) CQEntries() uint32 { return r.cq.entries }
