package uring

import (
	"errors"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// register calls io_uring_register, retrying when a signal interrupts it
// (some registrations wait for the ring to go idle).
func (r *Ring) register(name string, opcode uintptr, arg unsafe.Pointer, nr uint32) (int, error) {
	if !r.open {
		return 0, ErrClosed
	}
	for {
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), opcode, uintptr(arg), uintptr(nr), 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		default:
			return 0, sysError("io_uring_register("+name+")", errno)
		}
	}
}

// Enable starts a ring created with SetupRDisabled; until then submissions
// fail with EBADFD. Creating a ring disabled lets registrations (files,
// buffers) happen before any request can run.
func (r *Ring) Enable() error {
	_, err := r.register("enable_rings", registerEnableRings, nil, 0)
	return err
}

// RegisterEventFd makes the kernel signal eventfd fd on every posted CQE, so
// a ring can be waited on with poll/epoll or from another thread.
func (r *Ring) RegisterEventFd(fd int) error {
	r.regArg = int32(fd)
	_, err := r.register("eventfd", registerEventFd, unsafe.Pointer(&r.regArg), 1)
	return err
}

// RegisterEventFdAsync is RegisterEventFd, but only completions that
// finished asynchronously (not inline during submission) signal fd.
func (r *Ring) RegisterEventFdAsync(fd int) error {
	r.regArg = int32(fd)
	_, err := r.register("eventfd_async", registerEventFdAsync, unsafe.Pointer(&r.regArg), 1)
	return err
}

// RegisterIOWQMaxWorkers bounds the kernel's io-wq worker threads of the
// ring: bounded limits those running requests that take a bounded time
// (regular-file I/O the kernel could not issue without blocking),
// unbounded those that may wait forever (sockets, pipes without poll). The
// limits hold for each thread that submits to the ring (its own io-wq)
// and each NUMA node. 0 leaves a limit unchanged. It returns the previous
// limits (Linux 5.15).
func (r *Ring) RegisterIOWQMaxWorkers(bounded, unbounded uint32) (prevBounded, prevUnbounded uint32, err error) {
	vals := [2]uint32{bounded, unbounded}
	if _, err := r.register("iowq_max_workers", registerIOWQMax, unsafe.Pointer(&vals), 2); err != nil {
		return 0, 0, err
	}
	return vals[0], vals[1], nil
}

// cqEventFdDisabled is IORING_CQ_EVENTFD_DISABLED, the one flag of the CQ
// ring's flags word, which only the program writes.
const cqEventFdDisabled = 1 << 0

// SetEventFdSignals turns the signalling of the registered eventfd on or
// off (IORING_CQ_EVENTFD_DISABLED, Linux 5.8+), without a system call:
// while off, posted completions do not signal it. It reports false, and
// changes nothing, on a kernel without the flag or a closed ring.
//
// The switch is one locked read-modify-write, a full barrier. The kernel
// reads the flag after storing the CQ tail with release order only, so a
// completion posted as signals are turned back on may both miss the
// signal and be missed by a CQReady called right after the switch: a
// program that then sleeps on the eventfd must bound its first sleep and
// check the CQ ring again.
func (r *Ring) SetEventFdSignals(on bool) bool {
	if !r.open || r.cq.kflags == nil {
		return false
	}
	if on {
		atomic.AndUint32(r.cq.kflags, ^uint32(cqEventFdDisabled))
	} else {
		atomic.OrUint32(r.cq.kflags, cqEventFdDisabled)
	}
	return true
}

// UnregisterEventFd removes the registered eventfd.
func (r *Ring) UnregisterEventFd() error {
	_, err := r.register("unregister_eventfd", unregisterEventFd, nil, 0)
	return err
}

var errNoFiles = errors.New("faio/uring: RegisterFiles needs at least one descriptor (-1 for an empty slot)")

// RegisterFiles registers fds as the ring's fixed file table: an SQE with
// SQEFixedFile then names fds[i] by Fd = i, saving a file lookup per
// request. Entries of -1 are empty slots for RegisterFilesUpdate. The kernel
// takes its own references, so fds may be closed afterwards.
func (r *Ring) RegisterFiles(fds []int32) error {
	if !r.open {
		return ErrClosed
	}
	if len(fds) == 0 {
		return errNoFiles
	}
	_, err := r.register("files", registerFiles, unsafe.Pointer(&fds[0]), uint32(len(fds)))
	return err
}

// filesUpdate is struct io_uring_files_update.
type filesUpdate struct {
	offset uint32
	resv   uint32
	fds    uint64
}

// RegisterFilesUpdate replaces the fixed-file slots starting at offset with
// fds (-1 empties a slot) and returns how many were updated.
func (r *Ring) RegisterFilesUpdate(offset uint32, fds []int32) (int, error) {
	if !r.open {
		return 0, ErrClosed
	}
	if len(fds) == 0 {
		return 0, nil
	}
	up := filesUpdate{offset: offset, fds: uint64(uintptr(unsafe.Pointer(&fds[0])))}
	n, err := r.register("files_update", registerFilesUpdate, unsafe.Pointer(&up), uint32(len(fds)))
	// up holds fds' address only as an integer; the syscall has returned,
	// but keep the slice reachable until here all the same.
	runtime.KeepAlive(fds)
	return n, err
}

// UnregisterFiles drops the fixed file table.
func (r *Ring) UnregisterFiles() error {
	_, err := r.register("unregister_files", unregisterFiles, nil, 0)
	return err
}

var errNoBuffers = errors.New("faio/uring: RegisterBuffers needs at least one non-empty buffer")

// RegisterBuffers pins bufs in the kernel for PrepReadFixed/PrepWriteFixed,
// which then skip mapping the pages on every request. The ring keeps bufs
// reachable until UnregisterBuffers or Close, so they are neither freed nor
// reused while the kernel holds them; the caller must not reslice them into
// other uses either. Locked memory counts against RLIMIT_MEMLOCK.
func (r *Ring) RegisterBuffers(bufs [][]byte) error {
	if !r.open {
		return ErrClosed
	}
	if len(bufs) == 0 {
		return errNoBuffers
	}
	iovs := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) == 0 {
			return errNoBuffers
		}
		iovs[i].Base = &b[0]
		iovs[i].SetLen(len(b))
	}
	if _, err := r.register("buffers", registerBuffers, unsafe.Pointer(&iovs[0]), uint32(len(iovs))); err != nil {
		return err
	}
	r.buffers = append(r.buffers, bufs...)
	return nil
}

// UnregisterBuffers releases the registered buffers from the kernel's
// table. The kernel does not wait for the requests that use them: one in
// flight (a READ_FIXED waiting for data) keeps its pages and writes into
// them when it completes. So the ring keeps the buffers reachable for as
// long as it lives, Close included: letting them go freed memory the
// kernel then wrote into (found by a reviewer).
func (r *Ring) UnregisterBuffers() error {
	if _, err := r.register("unregister_buffers", unregisterBuffers, nil, 0); err != nil {
		return err
	}
	return nil
}
