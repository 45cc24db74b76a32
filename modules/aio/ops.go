package aio

import (
	"unsafe"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// The Op types of files and sockets. Each holds, through Go pointers, every
// piece of memory its SQE names (buffer, iovec array, path, sockaddr,
// statx, msghdr), so Submit's in-flight record keeps it alive until the
// completion. They are embedded in their owner or pooled, never allocated
// per operation in steady state; their users clear the buffer references
// after Submit returns, so a pooled op does not pin a caller's buffer.

// fdOp is an operation on one descriptor with at most one buffer: read,
// write, recv, send (buf, off, flags), fsync (flags), shutdown (flags holds
// how) and close (fdGuard closes with its own closeOp).
type fdOp struct {
	opcode uring.Op
	fd     int
	buf    []byte
	off    uint64
	flags  int
	cached bool // a read a task may first try in the page cache (nowait)
	hit    bool // nowait made the read (set by nowait, for File.Read)
	// kaio is set for a read or write of an O_DIRECT file, which a task
	// on the portable backend submits to Linux AIO (kaio.go).
	kaio *kaioFile
}

// Prep fills sqe for o.opcode.
func (o *fdOp) Prep(sqe *uring.SQE) {
	switch o.opcode {
	case uring.OpRead:
		sqe.PrepRead(o.fd, o.buf, o.off)
	case uring.OpWrite:
		sqe.PrepWrite(o.fd, o.buf, o.off)
	case uring.OpRecv:
		sqe.PrepRecv(o.fd, o.buf, o.flags)
	case uring.OpSend:
		sqe.PrepSend(o.fd, o.buf, o.flags)
	case uring.OpSendZC:
		sqe.PrepSendZC(o.fd, o.buf, o.flags, 0)
	case uring.OpFsync:
		sqe.PrepFsync(o.fd, uint32(o.flags))
	case uring.OpShutdown:
		sqe.PrepShutdown(o.fd, o.flags)
	case uring.OpClose:
		sqe.PrepClose(o.fd)
	default:
		panic("faio/aio: fdOp with unexpected opcode " + o.opcode.String())
	}
}

// maxIovecs is IOV_MAX: a longer vector is transferred in several calls.
const maxIovecs = 1024

// vecOp is readv or writev; iovs point into the caller's buffers (Iovec.Base
// is a Go pointer, so the iovec array keeps them alive too).
type vecOp struct {
	opcode uring.Op
	fd     int
	iovs   []unix.Iovec
	off    uint64
}

// Prep fills sqe for readv or writev.
func (o *vecOp) Prep(sqe *uring.SQE) {
	if o.opcode == uring.OpWritev {
		sqe.PrepWritev(o.fd, o.iovs, o.off)
		return
	}
	sqe.PrepReadv(o.fd, o.iovs, o.off)
}

// setBufs points o.iovs at bufs (at most maxIovecs of them), skipping skip
// bytes at the front, and returns how many bytes they describe.
func (o *vecOp) setBufs(bufs [][]byte, skip int) int {
	o.iovs = o.iovs[:0]
	total := 0
	for _, b := range bufs {
		if skip >= len(b) {
			skip -= len(b)
			continue
		}
		b = b[skip:]
		skip = 0
		if len(o.iovs) == maxIovecs {
			break
		}
		iov := unix.Iovec{Base: &b[0]}
		iov.SetLen(len(b))
		o.iovs = append(o.iovs, iov)
		total += len(b)
	}
	return total
}

func (o *vecOp) clear() {
	clear(o.iovs)
	o.iovs = o.iovs[:0]
}

// openOp is openat(AT_FDCWD, path, flags, mode).
type openOp struct {
	path  *byte
	flags int
	mode  uint32
	// async sends the open straight to the kernel's async workers,
	// skipping the inline attempt, which the kernel makes with
	// O_NONBLOCK (see OpenFile).
	async bool
	// ringed records that Prep ran: the open went to a ring, which tries
	// it inline with O_NONBLOCK first.
	ringed bool
}

// Prep fills sqe for openat.
func (o *openOp) Prep(sqe *uring.SQE) {
	o.ringed = true
	sqe.PrepOpenat(unix.AT_FDCWD, o.path, o.flags, o.mode)
	if o.async {
		sqe.SetFlags(uring.SQEAsync)
	}
}

// emptyPath is the "" that statx needs with AT_EMPTY_PATH; a package
// variable never moves and is always reachable.
var emptyPath [1]byte

// statxOp is statx(fd, "", AT_EMPTY_PATH): the status of an open file.
type statxOp struct {
	fd  int
	stx unix.Statx_t
}

// Prep fills sqe for statx.
func (o *statxOp) Prep(sqe *uring.SQE) {
	sqe.PrepStatx(o.fd, &emptyPath[0], unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &o.stx)
}

// sockaddrOp is accept (the kernel fills sa and salen) or connect (to sa).
type sockaddrOp struct {
	opcode     uring.Op
	fd         int
	sa         uring.RawSockaddrAny
	salen      uint32
	connecting bool // direct: connect(2) returned EINPROGRESS
	// again: the first non-blocking connect(2) said EAGAIN (a TCP
	// socket finding no free local port; Unix sockets connect apart, see
	// dialUnix). Nothing is in progress and the socket stays writable,
	// so waiting would spin: the dial fails with EAGAIN at once, as
	// package net's does.
	again bool
}

// Prep fills sqe for accept or connect.
func (o *sockaddrOp) Prep(sqe *uring.SQE) {
	if o.opcode == uring.OpConnect {
		sqe.PrepConnect(o.fd, &o.sa, o.salen)
		return
	}
	o.salen = unix.SizeofSockaddrAny
	sqe.PrepAccept(o.fd, &o.sa, &o.salen, unix.SOCK_CLOEXEC)
}

// msgOp is sendmsg or recvmsg of one buffer with a peer address: the
// datagram operations that name (or learn) the other end. The uring
// binding has no Prep method for them, so Prep fills the entry itself, as
// io_uring_prep_sendmsg/recvmsg do: addr is the msghdr, len 1.
type msgOp struct {
	opcode uring.Op
	fd     int
	buf    []byte
	flags  int
	sa     uring.RawSockaddrAny
	salen  uint32
	iov    unix.Iovec
	msg    unix.Msghdr
}

// Prep fills sqe for sendmsg or recvmsg.
func (o *msgOp) Prep(sqe *uring.SQE) {
	o.build()
	// The op is heap memory kept by the in-flight record, so the address
	// below stays valid; the msghdr's own fields are Go pointers.
	*sqe = uring.SQE{
		Opcode:  o.opcode,
		Fd:      int32(o.fd),
		Addr:    uint64(uintptr(unsafe.Pointer(&o.msg))),
		Len:     1,
		OpFlags: uint32(o.flags),
	}
}

// build points the msghdr at the buffer and the address.
func (o *msgOp) build() {
	o.iov = unix.Iovec{}
	if len(o.buf) > 0 {
		o.iov.Base = &o.buf[0]
		o.iov.SetLen(len(o.buf))
	}
	o.msg = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&o.sa)), Iov: &o.iov}
	o.msg.SetIovlen(1)
	if o.opcode == uring.OpRecvmsg {
		o.msg.Namelen = unix.SizeofSockaddrAny
	} else {
		o.msg.Namelen = o.salen
	}
}

func (o *msgOp) clear() {
	o.buf = nil
	o.iov = unix.Iovec{}
	o.msg = unix.Msghdr{}
}
