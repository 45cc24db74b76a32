package aio

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// How a plain goroutine does I/O.
//
// A task's operation runs on its worker's io_uring: the task suspends and
// the worker runs other tasks meanwhile. A plain goroutine has no worker;
// handing its operation to a task and waiting for that task costs two
// cross-thread wake-ups per operation (W10 in the bench measured about
// 160 µs per 64-byte round trip that way, against 14 µs for net.Conn). So a
// goroutine does what packages os and net do, and pays what they pay:
//
//   - A file operation is the system call itself, in the goroutine. Go's
//     scheduler hands the goroutine's P to another thread while it blocks.
//   - A socket operation is the system call on a non-blocking descriptor,
//     and when the socket is not ready the goroutine waits in Go's
//     netpoller. On its first such use the socket is made non-blocking
//     and registered with the netpoller through an os.File, which from
//     then on owns the descriptor: the fdGuard closes it through that File.
//     io_uring's recv, send, accept and their msg forms arm their own poll
//     whatever O_NONBLOCK says, so tasks may keep using the socket.
//
// Cancellation keeps its meaning: a goroutine waiting for a socket whose
// ctx ends gets ctx.Err() (the wait is cut short through the File's
// deadline, which nothing else sets), and a buffer is the caller's again
// when the call returns, since the system call is over.

// directOp is an Op that can also run as a system call in the calling
// goroutine. direct returns what a completion would: a count or a
// descriptor, or -errno. On a non-blocking socket it returns -EAGAIN when
// the socket is not ready.
type directOp interface {
	runtime.Op
	direct() runtime.Result
}

// submit runs a file operation (or one that does not wait for a peer):
// on the calling task's ring; from a plain goroutine, as a system call;
// from a task on the portable backend, as a system call on the blocking
// pool while the task suspends, or through Linux AIO for an O_DIRECT
// transfer (kaio.go). A ctx that has ended runs nothing.
func submit(ctx context.Context, rt *runtime.Runtime, op directOp) (runtime.Result, error) {
	if runtime.InTask(ctx) {
		if n, ok := op.(nowaitOp); ok {
			if err := ctx.Err(); err != nil {
				return runtime.Result{}, err
			}
			if res, done := n.nowait(); done {
				// Completed without suspending: charge the task's
				// cooperative budget, as every such faio operation does.
				// The read happened: its result stands even if ctx
				// ends meanwhile, as Submit's does.
				_ = runtime.ConsumeCurrent(ctx)
				return res, nil
			}
		}
		res, err := runtime.SubmitOn(ctx, rt, op)
		if err != runtime.ErrNoRing {
			return res, err
		}
		if o, ok := kaioOp(op); ok {
			if err := ctx.Err(); err != nil {
				return runtime.Result{}, err
			}
			if res, ok := submitKaio(ctx, o); ok {
				return res, nil
			}
		}
		return blocking(ctx, op.direct)
	}
	if err := ctx.Err(); err != nil {
		return runtime.Result{}, err
	}
	return op.direct(), nil
}

// maxBlocking bounds the blocking pool: at most this many file system
// calls of portable-backend tasks run at once (each holds an OS thread
// while it blocks), as tokio bounds its spawn_blocking threads. The others
// wait their turn.
const maxBlocking = 64

var blockingSlots = make(chan struct{}, maxBlocking)

// blocking runs fn, a system call on a regular file that may block its
// thread, on a goroutine of the blocking pool while the calling task
// suspends. Cancellation ends the wait for a slot, but not fn once it
// runs: fn uses the caller's buffer until it returns, and a disk read or
// write cannot be interrupted (pollable files, such as pipes and
// terminals, wait in the netpoller instead: see File).
func blocking(ctx context.Context, fn func() runtime.Result) (runtime.Result, error) {
	if err := ctx.Err(); err != nil {
		return runtime.Result{}, err
	}
	var res runtime.Result
	started := false
	err := offload(context.WithoutCancel(ctx), func() {
		select {
		case blockingSlots <- struct{}{}:
		case <-ctx.Done():
			return // nothing ran: the wait for a slot is cancellable
		}
		started = true
		res = fn()
		<-blockingSlots
	})
	if err == nil && !started {
		err = ctx.Err()
	}
	return res, err
}

// nowaitOp is an operation a task first tries inline, on its worker, in a
// form that never blocks: a read of data the page cache holds costs a
// system call instead of a ring submission and two coroutine switches.
// nowait reports false (the kernel said EAGAIN: the data is not cached)
// when the operation must go to the ring after all.
type nowaitOp interface {
	nowait() (runtime.Result, bool)
}

// nowait reads with preadv2(RWF_NOWAIT), which returns EAGAIN instead of
// waiting for the disk (Linux 4.14); only reads try it.
func (o *fdOp) nowait() (runtime.Result, bool) {
	if o.opcode != uring.OpRead || !o.cached || len(o.buf) == 0 {
		return runtime.Result{}, false
	}
	// CurrentPos is -1: preadv2's "the file position".
	n, ok := preadNowait(o.fd, o.buf, int64(o.off))
	o.hit = ok
	return runtime.Result{Res: int32(n)}, ok
}

// preadNowait reads into b (at most maxRW bytes of it) at off, or at the
// file position if off is -1, with preadv2(RWF_NOWAIT): only what the page
// cache holds, without waiting for the disk. ok is false on any error:
// EAGAIN (not cached), EOPNOTSUPP (a file without nowait reads) or another,
// which the ring's attempt then reports.
//
// A read of at most rawCopyMax bytes is made as a raw system call, without
// the scheduler's entersyscall/exitsyscall bookkeeping, which costs about
// 100 ns, a tenth of a cached 4 KiB read: RWF_NOWAIT makes the kernel
// return instead of waiting for the disk, so the call only copies what the
// page cache holds and ends as soon as Go code copying as much would. A
// larger read keeps the bookkeeping, so that the thread's P is handed on
// during a long copy. (A buffer mapped from a file may fault in from disk
// during the copy; Go code writing to it would stall its P as long.)
func preadNowait(fd int, b []byte, off int64) (n int, ok bool) {
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(capRW(b)))
	var r uintptr
	var errno syscall.Errno
	if len(b) <= rawCopyMax {
		r, _, errno = unix.RawSyscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1,
			uintptr(off), uintptr(uint64(off)>>32), unix.RWF_NOWAIT)
	} else {
		r, _, errno = unix.Syscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1,
			uintptr(off), uintptr(uint64(off)>>32), unix.RWF_NOWAIT)
	}
	if errno != 0 {
		return 0, false
	}
	return int(r), true
}

// rawCopyMax is the largest transfer made as a raw system call: a cached
// read (see preadNowait) or a socket's receive or send (see rawOp). 64 KiB
// copy in a few microseconds.
const rawCopyMax = 64 << 10

// maxRW caps one system call's transfer, as package os does, so that the
// count fits a completion's int32; the callers loop.
const maxRW = 1 << 30

func capRW(b []byte) []byte {
	if len(b) > maxRW {
		return b[:maxRW]
	}
	return b
}

// sysResult turns a raw system call's outcome into a Result.
func sysResult(r uintptr, errno syscall.Errno) runtime.Result {
	if errno != 0 {
		return runtime.Result{Res: -int32(errno)}
	}
	return runtime.Result{Res: int32(r)}
}

// sys makes a blocking-aware system call, retrying on EINTR. call makes
// it with unix.Syscall6 and converts its pointer arguments to uintptr in
// that call's argument list, the one place where Go keeps the memory they
// point to valid (and unmoved, should it be on a stack) until the call
// returns; a wrapper that took uintptr arguments would not.
func sys(call func() (uintptr, uintptr, syscall.Errno)) runtime.Result {
	for {
		r, _, errno := call()
		if errno != unix.EINTR {
			return sysResult(r, errno)
		}
	}
}

// bufPtr returns the address of b's first byte, nil for an empty b.
func bufPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func (o *fdOp) direct() runtime.Result {
	fd := uintptr(o.fd)
	switch o.opcode {
	case uring.OpRead, uring.OpWrite:
		b := capRW(o.buf)
		trap := uintptr(unix.SYS_PREAD64)
		if o.opcode == uring.OpWrite {
			trap = unix.SYS_PWRITE64
		}
		if o.off == uring.CurrentPos {
			trap = unix.SYS_READ
			if o.opcode == uring.OpWrite {
				trap = unix.SYS_WRITE
			}
		}
		return sys(func() (uintptr, uintptr, syscall.Errno) {
			return unix.Syscall6(trap, fd, uintptr(bufPtr(b)), uintptr(len(b)), uintptr(o.off), 0, 0)
		})
	case uring.OpRecv, uring.OpSend, uring.OpSendZC:
		// MSG_WAITALL means nothing to a non-blocking socket; the
		// callers loop for "all". Off the ring a zero-copy send is a
		// plain one.
		b := capRW(o.buf)
		flags := uintptr(o.flags &^ unix.MSG_WAITALL)
		trap := uintptr(unix.SYS_RECVFROM)
		if o.opcode != uring.OpRecv {
			trap = unix.SYS_SENDTO
		}
		return sys(func() (uintptr, uintptr, syscall.Errno) {
			return unix.Syscall6(trap, fd, uintptr(bufPtr(b)), uintptr(len(b)), flags, 0, 0)
		})
	case uring.OpFsync: // flags 0: the only fsync File makes
		return sys(func() (uintptr, uintptr, syscall.Errno) { return unix.Syscall(unix.SYS_FSYNC, fd, 0, 0) })
	case uring.OpShutdown:
		return sys(func() (uintptr, uintptr, syscall.Errno) {
			return unix.Syscall(unix.SYS_SHUTDOWN, fd, uintptr(o.flags), 0)
		})
	case uring.OpClose:
		// Not retried on EINTR: the descriptor is gone whatever close
		// says (Linux), and a retry could close a reused number.
		r, _, errno := unix.Syscall(unix.SYS_CLOSE, fd, 0, 0)
		return sysResult(r, errno)
	}
	panic("faio/aio: no direct form of " + o.opcode.String())
}

// rawOp is an operation whose system call on a non-blocking descriptor
// is bounded work that never waits: a socket's receive or send of at most
// rawCopyMax bytes copies what the socket holds or has room for, up to
// that size, and returns, EAGAIN if that is nothing. raw makes it without
// the scheduler's entersyscall/exitsyscall bookkeeping, as the uring
// binding makes a light submission that does not wait: about 100-170 ns a
// call, which the portable backend otherwise pays on every socket
// operation of a task. Such a call keeps its P and holds up a collection's
// stop-the-world until it returns, so anything longer (a larger buffer,
// whose send goes on copying while the peer drains; a pipe or device,
// whose read or write may sleep on a lock or compute at length) goes
// through the scheduler.
type rawOp interface {
	raw() runtime.Result
}

// raw is direct for a receive or a send of at most rawCopyMax bytes made
// without the scheduler's bookkeeping, with MSG_DONTWAIT, so that it
// never waits even on a socket left blocking for the ring (submitPoll's
// receive on the spot); for any other operation it is direct.
func (o *fdOp) raw() runtime.Result {
	if len(o.buf) > rawCopyMax {
		return o.direct()
	}
	var trap uintptr
	switch o.opcode {
	case uring.OpRecv:
		trap = unix.SYS_RECVFROM
	case uring.OpSend, uring.OpSendZC:
		trap = unix.SYS_SENDTO
	default:
		return o.direct()
	}
	flags := uintptr(o.flags&^unix.MSG_WAITALL | unix.MSG_DONTWAIT)
	for {
		r, _, errno := unix.RawSyscall6(trap, uintptr(o.fd), uintptr(bufPtr(o.buf)), uintptr(len(o.buf)), flags, 0, 0)
		if errno != unix.EINTR {
			return sysResult(r, errno)
		}
	}
}

// tryNow makes op once, without waiting for the socket: raw for a
// transfer that can be (see rawOp), else direct on the non-blocking
// descriptor.
func tryNow(op directOp) runtime.Result {
	if r, ok := op.(rawOp); ok {
		return r.raw()
	}
	return op.direct()
}

func (o *vecOp) direct() runtime.Result {
	if len(o.iovs) == 0 {
		return runtime.Result{}
	}
	iovs, fd := o.iovs, uintptr(o.fd)
	if o.off == uring.CurrentPos {
		trap := uintptr(unix.SYS_READV)
		if o.opcode == uring.OpWritev {
			trap = unix.SYS_WRITEV
		}
		return sys(func() (uintptr, uintptr, syscall.Errno) {
			return unix.Syscall(trap, fd, uintptr(unsafe.Pointer(&iovs[0])), uintptr(len(iovs)))
		})
	}
	trap := uintptr(unix.SYS_PREADV)
	if o.opcode == uring.OpWritev {
		trap = unix.SYS_PWRITEV
	}
	// preadv takes the offset as two longs, low and high half.
	off := o.off
	return sys(func() (uintptr, uintptr, syscall.Errno) {
		return unix.Syscall6(trap, fd, uintptr(unsafe.Pointer(&iovs[0])), uintptr(len(iovs)), uintptr(off), uintptr(off>>32), 0)
	})
}

// atFDCWD is AT_FDCWD (-100) as a system call argument.
var atFDCWD = uintptr(unix.AT_FDCWD & (1<<64 - 1))

func (o *openOp) direct() runtime.Result {
	return sys(func() (uintptr, uintptr, syscall.Errno) {
		return unix.Syscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(o.path)), uintptr(o.flags), uintptr(o.mode), 0, 0)
	})
}

func (o *statxOp) direct() runtime.Result {
	return sys(func() (uintptr, uintptr, syscall.Errno) {
		return unix.Syscall6(unix.SYS_STATX, uintptr(o.fd), uintptr(unsafe.Pointer(&emptyPath[0])), unix.AT_EMPTY_PATH,
			unix.STATX_BASIC_STATS, uintptr(unsafe.Pointer(&o.stx)), 0)
	})
}

// direct accepts, or connects: on a non-blocking socket the first call
// starts the connection (EINPROGRESS reads as EAGAIN: wait until
// writable) and the later ones ask how it went, as package net does.
func (o *sockaddrOp) direct() runtime.Result {
	if o.opcode == uring.OpConnect {
		return o.connect()
	}
	o.salen = unix.SizeofSockaddrAny
	return sys(func() (uintptr, uintptr, syscall.Errno) {
		return unix.Syscall6(unix.SYS_ACCEPT4, uintptr(o.fd), uintptr(unsafe.Pointer(&o.sa)), uintptr(unsafe.Pointer(&o.salen)),
			unix.SOCK_CLOEXEC, 0, 0)
	})
}

func (o *sockaddrOp) connect() runtime.Result {
	eagain := runtime.Result{Res: -int32(unix.EAGAIN)}
	if !o.connecting {
		// Not retried on EINTR: the connection goes on in the
		// background, as after EINPROGRESS (a second connect would say
		// EALREADY).
		_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(o.fd), uintptr(unsafe.Pointer(&o.sa)), uintptr(o.salen))
		if errno == unix.EINPROGRESS || errno == unix.EINTR {
			o.connecting = true
			return eagain
		}
		if errno == unix.EAGAIN {
			o.again = true
			return runtime.Result{} // ends the wait; connect reports it
		}
		return sysResult(0, errno)
	}
	soerr, err := unix.GetsockoptInt(o.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return runtime.Result{Res: -int32(err.(syscall.Errno))}
	}
	switch errno := syscall.Errno(soerr); errno {
	case unix.EINPROGRESS, unix.EALREADY:
		return eagain
	case unix.EISCONN:
		return runtime.Result{}
	case 0:
		// The netpoller may wake spuriously: connected only if the
		// peer has a name.
		if _, err := unix.Getpeername(o.fd); err != nil {
			return eagain
		}
		return runtime.Result{}
	default:
		return runtime.Result{Res: -int32(errno)}
	}
}

func (o *msgOp) direct() runtime.Result {
	o.build()
	trap := uintptr(unix.SYS_RECVMSG)
	if o.opcode == uring.OpSendmsg {
		trap = unix.SYS_SENDMSG
	}
	return sys(func() (uintptr, uintptr, syscall.Errno) {
		return unix.Syscall(trap, uintptr(o.fd), uintptr(unsafe.Pointer(&o.msg)), uintptr(o.flags))
	})
}

// poller is a descriptor's registration with Go's netpoller.
type poller struct {
	f  *os.File
	rc syscall.RawConn
	// pollable is false for a descriptor the netpoller refused (a
	// character device without poll, such as /dev/null): its operations
	// are then blocking system calls, as os does for it.
	pollable bool
}

// poller returns the socket's netpoller registration, making it on first
// use. The caller holds a reference, so the descriptor is open.
func (g *fdGuard) poller() (*poller, error) {
	if p := g.poll.Load(); p != nil {
		return p, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.poll.Load(); p != nil {
		return p, nil
	}
	if err := unix.SetNonblock(g.fd, true); err != nil {
		return nil, os.NewSyscallError("setnonblock", err)
	}
	f := os.NewFile(uintptr(g.fd), "faio")
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	p := &poller{f: f, rc: rc, pollable: true}
	if f.SetReadDeadline(time.Time{}) == os.ErrNoDeadline {
		// Not registered: keep the descriptor blocking.
		p.pollable = false
		if err := unix.SetNonblock(g.fd, false); err != nil {
			return nil, os.NewSyscallError("setnonblock", err)
		}
	}
	g.poll.Store(p)
	return p, nil
}

// aLongTimeAgo is a deadline in the past: it ends a netpoller wait at once.
var aLongTimeAgo = time.Unix(1, 0)

func (p *poller) setDeadline(write bool, t time.Time) {
	// Errors are impossible here: the File is open (the caller holds a
	// reference) and registered with the netpoller.
	if write {
		_ = p.f.SetWriteDeadline(t)
	} else {
		_ = p.f.SetReadDeadline(t)
	}
}

// submitPoll runs an operation on a socket or another descriptor that may
// wait for a peer: on the calling task's ring (a receive is tried on the
// spot first); from a plain goroutine, with pollWait; from a task on the
// portable backend, or on a pipe (fdGuard.pipe), with waitReady, through
// the runtime's readiness poller (or, if that refuses the descriptor, one
// try on the spot and then pollWait on a goroutine while the task
// suspends). The caller holds a reference and the direction's lock, so no
// other goroutine uses the File's deadline of that direction.
func (g *fdGuard) submitPoll(ctx context.Context, op directOp, write bool) (runtime.Result, error) {
	if !runtime.InTask(ctx) {
		return g.pollWait(ctx, op, write, false)
	}
	var res runtime.Result
	var err error
	if g.pipe {
		// Not on the ring: Close could not end a read of a pipe that
		// nobody writes to (a pipe has no shutdown), and the task would
		// wait on the ring forever. The readiness poller can end it.
		if err := ctx.Err(); err != nil {
			return runtime.Result{}, err
		}
		err = runtime.ErrNoRing
	} else {
		res, err = g.submitRing(ctx, op)
	}
	if err != runtime.ErrNoRing {
		return res, err
	}
	return g.submitNoRing(ctx, op, write)
}

// submitRing is submitPoll's part for a socket of a task: on its worker's
// ring, a receive tried on the spot first. It returns runtime.ErrNoRing
// when the operation is to wait elsewhere.
func (g *fdGuard) submitRing(ctx context.Context, op directOp) (runtime.Result, error) {
	if _, ok := op.(interface{ noRingForm() }); ok {
		return runtime.Result{}, runtime.ErrNoRing
	}
	if f, ok := op.(*fdOp); ok && f.opcode == uring.OpRecv && len(f.buf) <= rawCopyMax && g.rt.Backend() == runtime.BackendIOUring {
		// A receive may be tried on the spot before the ring: in
		// request/response traffic the next request has often arrived
		// while the task wrote its reply, and a hit saves the
		// suspension, the ring entry and the resumption, where a miss
		// costs a system call (recvTry says when to try). W7's
		// faio/net ratio went from 1.14 to 1.00 (server CPU per round
		// trip 1.07x to 0.96x of net's), W7c's from 1.18 to 0.97. Sends
		// stay on the ring: made the same way they took W7 to 1.21,
		// since a loopback send does the peer's receive and wake-up
		// inside the call, which the ring batches.
		if err := ctx.Err(); err != nil {
			// As SubmitOn: an operation whose context has ended does
			// not start.
			return runtime.Result{}, err
		}
		if g.recvTry() {
			res := f.raw()
			hit := res.Res != -int32(unix.EAGAIN)
			g.recvTried(hit)
			if hit {
				// Done without suspending: charge the coop budget, so
				// that a task draining a busy socket still lets others
				// run.
				_ = runtime.ConsumeCurrent(ctx)
				return res, nil
			}
		}
	}
	res, err := runtime.SubmitOn(ctx, g.rt, op)
	if err == nil && res.Res == -int32(unix.EAGAIN) && g.poll.Load() != nil && !g.closing() {
		// The ring said EAGAIN for a descriptor made non-blocking for
		// the netpoller (older kernels, or files without nowait
		// support, do not arm a poll then): wait in the netpoller.
		err = runtime.ErrNoRing
	}
	return res, err
}

// A receive tried on the spot pays a system call when the socket is empty
// (1.5 µs on a virtual machine whose getpid costs 1.3), and saves the ring
// round trip when it is not. Which one wins depends on the traffic: two
// receives in three found data on W7 when one worker served every
// connection, one in three or four once the connections spread over two
// workers.
// So each socket keeps a score of its recent tries (fdGuard.recvHint):
//   - at 0 or above, the receive is tried; a hit raises the score (to at
//     most recvHintMax), a miss lowers it by one;
//   - a miss at 0 sends the next recvHintSkip receives straight to the
//     ring (the score goes to -recvHintSkip and each skipped receive
//     adds one), after which one is tried again.
//
// A socket that finds data in more than about half its tries keeps trying;
// one that rarely does pays one miss in about recvHintSkip+1 receives
// instead of one in each.
const (
	recvHintMax  = 7
	recvHintSkip = 8
)

// recvTry says whether the next receive is tried on the spot, and counts
// a skipped one. The caller holds the read direction's lock, so the load
// and the store need not be one atomic step (were they to race, a lost
// update would only move the next try).
func (g *fdGuard) recvTry() bool {
	s := g.recvHint.Load()
	if s >= 0 {
		return true
	}
	g.recvHint.Store(s + 1)
	return false
}

// recvTried records how a try went.
func (g *fdGuard) recvTried(hit bool) {
	s := g.recvHint.Load()
	switch {
	case hit:
		s = min(s+1, recvHintMax)
	case s > 0:
		s--
	default:
		s = -recvHintSkip
	}
	g.recvHint.Store(s)
}

// submitNoRing is submitPoll's part for a task whose operation does not
// go to a ring: the portable backend's, a pipe's.
func (g *fdGuard) submitNoRing(ctx context.Context, op directOp, write bool) (runtime.Result, error) {
	if err := ctx.Err(); err != nil {
		return runtime.Result{}, err
	}
	p, err := g.poller()
	if err != nil {
		return runtime.Result{}, err
	}
	if !p.pollable {
		return blocking(ctx, op.direct)
	}
	var res runtime.Result
	if _, disk := op.(interface{ readsDisk() }); disk {
		// It may wait for the disk: not on the worker.
		if res, err = blocking(ctx, op.direct); err != nil {
			return res, err
		}
	} else if rfd := g.readiness(); rfd != nil {
		if res, ok, err := g.waitReady(ctx, rfd, op, write); ok {
			return res, err
		}
		// The poller closed under the wait: its runtime, not the
		// descriptor's Close (a task of another runtime uses a
		// connection of a closed one). The netpoller serves on.
		res = tryNow(op)
	} else {
		res = tryNow(op)
	}
	if res.Res != -int32(unix.EAGAIN) || g.closing() {
		// Done without waiting: charge the coop budget, as for any
		// operation that completes without suspending.
		_ = runtime.ConsumeCurrent(ctx)
		return res, nil
	}
	if g.rfdClosed.Load() && ctx.Done() != nil {
		// The runtime refused the registration because it is closing:
		// a wait on a context that can be cancelled ends at Close, and
		// the netpoller's, below, would not (its goroutine hides ctx
		// from Close). One that cannot be cancelled must complete.
		return runtime.Result{}, runtime.ErrClosed
	}
	// pollWait honours ctx itself and returns once the system call is
	// over, so the task waits for it whatever ctx does.
	oerr := offload(context.WithoutCancel(ctx), func() { res, err = g.pollWait(ctx, op, write, true) })
	if oerr != nil {
		return runtime.Result{}, oerr
	}
	return res, err
}

// readiness returns the descriptor's registration with the runtime's
// readiness poller (runtime.RegisterFD), making it on first use, or nil if
// the poller refuses the descriptor: the caller then waits in the
// netpoller through a goroutine. The caller holds a reference.
func (g *fdGuard) readiness() *runtime.FD {
	if f := g.rfd.Load(); f != nil {
		return f
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.rfd.Load(); f != nil || g.noRFD {
		return f
	}
	f, err := g.rt.RegisterFD(g.fd)
	if err != nil {
		g.noRFD = true
		g.rfdClosed.Store(errors.Is(err, runtime.ErrClosed))
		return nil
	}
	g.rfd.Store(f)
	if g.closing() {
		// close may have looked for the registration before it was
		// stored: end it here too (Close is idempotent).
		f.Close()
	}
	return f
}

// waitReady runs a socket operation for a task on the portable backend:
// tried on the spot, and whenever the runtime's readiness poller reports
// the socket ready, until it does not return EAGAIN, Close begins (the
// result is then EAGAIN's) or ctx ends (ctx.Err()). The task suspends
// meanwhile, on no goroutine of its own. ok is false if the poller itself
// closed, and the descriptor is then no longer waited for there.
func (g *fdGuard) waitReady(ctx context.Context, rfd *runtime.FD, op directOp, write bool) (res runtime.Result, ok bool, err error) {
	tries := 0
	err = rfd.Wait(ctx, write, func() bool {
		tries++
		res = tryNow(op)
		return res.Res != -int32(unix.EAGAIN) || g.closing()
	})
	switch {
	case err == nil:
		if tries == 1 {
			// Done without waiting: charge the coop budget, as for any
			// operation that completes without suspending.
			_ = runtime.ConsumeCurrent(ctx)
		}
		return res, true, nil
	case errors.Is(err, runtime.ErrFDClosed):
		if g.closing() {
			// Close began: the result is EAGAIN's, as pollWait's.
			return runtime.Result{Res: -int32(unix.EAGAIN)}, true, nil
		}
		g.mu.Lock()
		if g.rfd.Load() == rfd {
			g.rfd.Store(nil)
			g.noRFD = true
		}
		g.mu.Unlock()
		return runtime.Result{}, false, nil
	}
	return runtime.Result{}, true, err
}

// pollWait runs a socket operation in the calling goroutine as a
// non-blocking system call, repeated whenever the netpoller says the
// socket is ready (for writing if write is set), until it does not return
// EAGAIN, Close begins (the result is then EAGAIN's) or ctx ends
// (ctx.Err()). tried says the caller has just made the call once and met
// EAGAIN.
func (g *fdGuard) pollWait(ctx context.Context, op directOp, write, tried bool) (runtime.Result, error) {
	if err := ctx.Err(); err != nil {
		return runtime.Result{}, err
	}
	p, err := g.poller()
	if err != nil {
		return runtime.Result{}, err
	}
	if !p.pollable {
		return op.direct(), nil // blocks, as os does for such a device
	}
	// When ctx can end (a NetConn's deadline context can), one try before
	// the wait's set-up (an AfterFunc and a channel): most sends, and
	// most receives of request/response traffic, complete here, and the
	// set-up would be wasted on them. Without it the wait's own first try
	// is as early, and a miss costs no extra call.
	if !tried && ctx.Done() != nil {
		if g.closing() {
			return runtime.Result{Res: -int32(unix.EAGAIN)}, nil
		}
		// Not into res below, which the wait's closure captures and so
		// lives on the heap.
		if first := tryNow(op); first.Res != -int32(unix.EAGAIN) {
			return first, nil
		}
	}
	var res runtime.Result
	// The netpoller forgets readiness seen before the wait starts
	// (RawConn.Read resets it), so the wait tries again inside.
	try := func(uintptr) bool {
		res = op.direct()
		return res.Res != -int32(unix.EAGAIN) || g.closing()
	}
	var stop func() bool
	var fired chan struct{}
	if ctx.Done() != nil {
		fired = make(chan struct{})
		stop = context.AfterFunc(ctx, func() {
			p.setDeadline(write, aLongTimeAgo)
			close(fired)
		})
	}
	if g.closing() {
		// Close began before the wait: the result is EAGAIN's, never
		// a zero that would read as a byte count or descriptor 0.
		res = runtime.Result{Res: -int32(unix.EAGAIN)}
	} else if write {
		err = p.rc.Write(try)
	} else {
		err = p.rc.Read(try)
	}
	if stop != nil && !stop() {
		// ctx ended: the deadline is set (or about to be); clear it for
		// the next operation, once it is. Unless Close began: then the
		// deadline is Close's too (see fdGuard.close), and the waits of
		// other goroutines must still end.
		<-fired
		p.setDeadline(write, time.Time{})
		if g.pipe && g.closing() {
			p.setDeadline(write, aLongTimeAgo)
		}
	}
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil && errors.Is(err, os.ErrDeadlineExceeded):
		return runtime.Result{}, ctx.Err()
	case g.closing() && errors.Is(err, os.ErrDeadlineExceeded):
		// Close ended the wait (a pipe's: see fdGuard.close).
		return runtime.Result{Res: -int32(unix.EAGAIN)}, nil
	case errors.Is(err, fs.ErrClosed):
		// Not while we hold a reference; kept for safety.
		return runtime.Result{Res: -int32(unix.EBADF)}, nil
	}
	return runtime.Result{}, err
}

// closeFD closes the descriptor through its netpoller File, if it has
// one, and reports whether it did.
func (g *fdGuard) closeFD() (bool, error) {
	p := g.poll.Load()
	if p == nil {
		return false, nil
	}
	err := p.f.Close()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return true, err
}
