package main

/*
#include "capi.h"
*/
import "C"

import (
	"context"
	"math"
	"time"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// maxTransfer caps one read or write, as Linux caps read(2) (MAX_RW_COUNT):
// the kernel's result must fit the CQE's int32.
const maxTransfer = 0x7ffff000

// sockaddrStorage is the size of struct sockaddr_storage, the largest
// address faio_connect accepts.
const sockaddrStorage = 128

//export faiocgo_sleep
func faiocgo_sleep(h, ns C.uint64_t, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	s, rc := runtimeOf(uint64(h))
	if s == nil {
		return C.int(rc)
	}
	d := time.Duration(math.MaxInt64)
	if ns < math.MaxInt64 {
		d = time.Duration(ns)
	}
	return C.int(s.start(uint64(token), &sleepJob{d: d, cb: uintptr(cb), arg: uintptr(arg)}))
}

//export faiocgo_read
func faiocgo_read(h C.uint64_t, fd C.int, buf unsafe.Pointer, n C.uint64_t, off C.int64_t, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	return C.int(startRW(uint64(h), uring.OpRead, int32(fd), buf, uint64(n), int64(off), cb, arg, token))
}

//export faiocgo_write
func faiocgo_write(h C.uint64_t, fd C.int, buf unsafe.Pointer, n C.uint64_t, off C.int64_t, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	return C.int(startRW(uint64(h), uring.OpWrite, int32(fd), buf, uint64(n), int64(off), cb, arg, token))
}

//export faiocgo_recv
func faiocgo_recv(h C.uint64_t, fd C.int, buf unsafe.Pointer, n C.uint64_t, flags C.int, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	return C.int(startSock(uint64(h), uring.OpRecv, int32(fd), buf, uint64(n), int(flags), cb, arg, token))
}

//export faiocgo_send
func faiocgo_send(h C.uint64_t, fd C.int, buf unsafe.Pointer, n C.uint64_t, flags C.int, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	return C.int(startSock(uint64(h), uring.OpSend, int32(fd), buf, uint64(n), int(flags)|unix.MSG_NOSIGNAL, cb, arg, token))
}

//export faiocgo_accept
func faiocgo_accept(h C.uint64_t, fd, flags C.int, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	s, rc := runtimeOf(uint64(h))
	if s == nil {
		return C.int(rc)
	}
	return C.int(s.start(uint64(token), &ioJob{
		op: uring.OpAccept, fd: int32(fd), flags: int(flags),
		cb: uintptr(cb), arg: uintptr(arg),
	}))
}

//export faiocgo_connect
func faiocgo_connect(h C.uint64_t, fd C.int, addr unsafe.Pointer, n C.uint32_t, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	s, rc := runtimeOf(uint64(h))
	if s == nil {
		return C.int(rc)
	}
	if n == 0 || n > sockaddrStorage {
		return C.int(codeEINVAL)
	}
	j := &ioJob{
		op: uring.OpConnect, fd: int32(fd), status: true,
		cb: uintptr(cb), arg: uintptr(arg),
		addr: new([sockaddrStorage]byte), addrLen: uint32(n),
	}
	// The kernel reads the address asynchronously: give it a Go copy that
	// the job (kept by the runtime until the completion) references.
	copy(j.addr[:], unsafe.Slice((*byte)(addr), int(n)))
	return C.int(s.start(uint64(token), j))
}

//export faiocgo_close
func faiocgo_close(h C.uint64_t, fd C.int, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	s, rc := runtimeOf(uint64(h))
	if s == nil {
		return C.int(rc)
	}
	return C.int(s.start(uint64(token), &ioJob{
		op: uring.OpClose, fd: int32(fd), status: true,
		cb: uintptr(cb), arg: uintptr(arg),
	}))
}

// startRW starts a read or write of n bytes at buf, at offset off (-1: the
// file position).
func startRW(h uint64, op uring.Op, fd int32, buf unsafe.Pointer, n uint64, off int64, cb, arg C.uintptr_t, token C.uint64_t) int32 {
	s, rc := runtimeOf(h)
	if s == nil {
		return rc
	}
	if off < -1 {
		return codeEINVAL
	}
	pos := uring.CurrentPos
	if off >= 0 {
		pos = uint64(off)
	}
	return s.start(uint64(token), &ioJob{
		op: op, fd: int32(fd), buf: cBuffer(buf, n), off: pos,
		cb: uintptr(cb), arg: uintptr(arg),
	})
}

// startSock starts a recv or send of n bytes at buf.
func startSock(h uint64, op uring.Op, fd int32, buf unsafe.Pointer, n uint64, flags int, cb, arg C.uintptr_t, token C.uint64_t) int32 {
	s, rc := runtimeOf(h)
	if s == nil {
		return rc
	}
	return s.start(uint64(token), &ioJob{
		op: op, fd: int32(fd), buf: cBuffer(buf, n), flags: flags,
		cb: uintptr(cb), arg: uintptr(arg),
	})
}

// cBuffer views n bytes of C memory at p (capped at maxTransfer) as a
// slice. The memory is C's: the garbage collector neither moves nor frees
// it, and faio.h makes the caller keep it until the callback.
func cBuffer(p unsafe.Pointer, n uint64) []byte {
	if p == nil || n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), int(min(n, maxTransfer)))
}

// sleepJob is faio_sleep.
type sleepJob struct {
	d       time.Duration
	cb, arg uintptr
}

func (j *sleepJob) run(ctx context.Context, s *rtState) started {
	return callDone(ctx, s, j.cb, j.arg, errorCode(runtime.Sleep(ctx, j.d)))
}

// ioJob is one I/O operation from C: it is both the job and the
// runtime.Op submitted on the ring of the worker running it.
type ioJob struct {
	op      uring.Op
	fd      int32
	buf     []byte
	off     uint64
	flags   int
	addr    *[sockaddrStorage]byte
	addrLen uint32
	// status selects the callback type: faio_done_fn (status) or
	// faio_io_fn (result).
	status  bool
	cb, arg uintptr
	// On the portable backend only (io_portable.go): all is set for a
	// recv or send with MSG_WAITALL on a stream socket, which goes on
	// after short transfers as the ring does, and moved counts the bytes
	// its earlier calls transferred.
	all   bool
	moved int
}

// Prep fills the SQE for the operation.
func (j *ioJob) Prep(sqe *uring.SQE) {
	switch j.op {
	case uring.OpRead:
		sqe.PrepRead(int(j.fd), j.buf, j.off)
	case uring.OpWrite:
		sqe.PrepWrite(int(j.fd), j.buf, j.off)
	case uring.OpRecv:
		sqe.PrepRecv(int(j.fd), j.buf, j.flags)
	case uring.OpSend:
		sqe.PrepSend(int(j.fd), j.buf, j.flags)
	case uring.OpAccept:
		sqe.PrepAccept(int(j.fd), nil, nil, j.flags)
	case uring.OpConnect:
		sqe.PrepConnect(int(j.fd), (*uring.RawSockaddrAny)(unsafe.Pointer(j.addr)), j.addrLen)
	case uring.OpClose:
		sqe.PrepClose(int(j.fd))
	}
}

func (j *ioJob) run(ctx context.Context, s *rtState) started {
	res, err := runtime.Submit(ctx, j)
	result := int64(res.Res)
	switch {
	case err == runtime.ErrNoRing:
		result = j.portable(ctx, s) // io_portable.go
	case err != nil:
		result = int64(errorCode(err))
	}
	if j.status {
		return callDone(ctx, s, j.cb, j.arg, int32(result))
	}
	return callIO(ctx, s, j.cb, j.arg, result)
}
