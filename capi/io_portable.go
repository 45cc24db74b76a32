package main

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// The C I/O calls on the portable backend, where there is no ring to
// submit to. The descriptor is the C program's, so faio neither registers
// it with Go's netpoller (which would take it over) nor changes its flags
// for long.
//
// A receive or a send is made with MSG_DONTWAIT, so it never blocks,
// whatever the descriptor's flags. If the program's flags hold
// MSG_DONTWAIT too, that one call is the result, -EAGAIN included, as on
// a ring; with MSG_WAITALL on a stream socket the operation goes on after
// short transfers until its whole buffer is done, as on a ring (see
// sockCall). Otherwise, or to go on, the operation waits in the runtime's
// readiness poller
// (runtime.RegisterFD) with the task suspended: a duplicate of the
// descriptor is registered while operations wait on the socket, and
// unregistered and closed after the last. As on a ring, a waiting
// operation holds its socket: the C program may close its descriptor
// meanwhile, and a socket opened later under the same number is another
// one. Other operations
// (read and write, whose calls could block on a descriptor left blocking;
// accept; connect) run on a goroutine of their own, which waits with
// poll(2) until the descriptor is ready, then makes the call, while the
// task suspends; on a pipe, a socket or a device the call does not wait
// either (callReady), so that no operation outlives shutdown. The poll wakes every pollSlice to see whether the runtime
// is shutting down (the only cancellation of a C operation), so a pending
// operation completes with FAIO_ECANCELED within that time of
// faio_runtime_free. Each such pending operation holds an OS thread while
// it waits: fine for a fallback, not for ten thousand of them.

// pollSlice bounds how long a pending operation takes to notice shutdown.
const pollSlice = 50 // ms

// portable runs j as described above and returns its result as the ring
// would: a count or a descriptor, or a negated errno, or FAIO_ECANCELED.
func (j *ioJob) portable(ctx context.Context, s *rtState) int64 {
	if (j.op == uring.OpRecv || j.op == uring.OpSend) && j.fd >= 0 {
		j.all = j.flags&unix.MSG_WAITALL != 0 && j.flags&unix.MSG_DONTWAIT == 0 && streamSocket(int(j.fd))
		if r, ok := j.viaPoller(ctx, s); ok {
			return r
		}
	}
	var (
		mu     sync.Mutex
		done   bool
		result int64
		waiter runtime.Waker
	)
	go func() {
		r := j.blocking(ctx)
		mu.Lock()
		result, done = r, true
		w := waiter
		mu.Unlock()
		w.Wake()
	}()
	// Not cancellable: the goroutine uses the C buffer until it returns,
	// and it returns soon after ctx ends.
	_ = runtime.Suspend(context.WithoutCancel(ctx), func(w runtime.Waker) bool {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return false
		}
		waiter = w
		return true
	})
	return result
}

// viaPoller makes j, a receive or a send, each time the readiness poller
// finds the descriptor ready, until it does not fail with EAGAIN; ok is
// false if the poller refuses the descriptor (the caller then waits with
// poll(2)).
//
// Like a ring's operation, a waiting one holds the socket it started on:
// it registers, and retries on, a duplicate of the C program's descriptor
// (see pollRegistry), so the program may close its descriptor meanwhile,
// and a new socket given the same number is a different one to faio.
func (j *ioJob) viaPoller(ctx context.Context, s *rtState) (int64, bool) {
	if ctx.Err() != nil {
		// As a ring would not start it: nothing is received or sent.
		return int64(codeECANCELED), true
	}
	dontWait := j.flags&unix.MSG_DONTWAIT != 0
	var r uintptr
	var errno error
	fd := int(j.fd)
	try := func() bool {
		for {
			r, errno = j.callOn(fd)
			if errno != unix.EINTR {
				return errno != unix.EAGAIN
			}
		}
	}
	// Most calls find the socket ready: they cost no registration (an
	// epoll_ctl each to add and remove). A descriptor added later
	// reports the readiness it already has, so nothing is missed.
	if try() || dontWait {
		// Done, or the program asked not to wait: -EAGAIN, as the
		// ring completes such a call.
		return errnoResult(r, errno), true
	}
	e, err := s.pollFDs.acquire(s.rt, fd)
	if err != nil {
		return 0, false
	}
	defer s.pollFDs.release(e)
	fd = e.dup
	if err := e.f.Wait(ctx, j.op == uring.OpSend, try); err != nil {
		if pe := (*runtime.PollerError)(nil); errors.As(err, &pe) {
			// The poller lost its epoll descriptor (a stray close
			// elsewhere in the program): no shutdown, so not
			// FAIO_ECANCELED, but the errno that showed it (found
			// by a reviewer).
			return j.pollerFailed(pe), true
		}
		// Cancelled: the runtime is shutting down. (The poller closes
		// only after the last task has ended.)
		return j.cancelled(), true
	}
	return errnoResult(r, errno), true
}

// pollRegistry counts, per socket, the operations waiting in the readiness
// poller: the first registers a duplicate of the C program's descriptor,
// the last unregisters and closes it. Entries are found by the program's
// descriptor number and told apart by the socket's identity (its inode),
// since the program may close a descriptor while operations on it wait
// and open another socket under the same number.
type pollRegistry struct {
	mu sync.Mutex
	m  map[int]*pollEntry
}

type pollEntry struct {
	f        *runtime.FD
	dup      int    // the registered duplicate, ours to close
	fd       int    // the C program's number, the key in pollRegistry.m
	dev, ino uint64 // the socket's identity
	refs     int
}

// acquire returns the entry of the socket fd refers to, registering it if
// no operation waits on that socket yet.
func (p *pollRegistry) acquire(rt *runtime.Runtime, fd int) (*pollEntry, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.m[fd]; e != nil && e.dev == st.Dev && e.ino == st.Ino {
		e.refs++
		return e, nil
	}
	// A new socket, or a new one under a number whose old socket still
	// has operations waiting (they keep their entry, which leaves the map
	// here).
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f, err := rt.RegisterFD(dup)
	if err != nil {
		unix.Close(dup)
		return nil, err
	}
	if p.m == nil {
		p.m = make(map[int]*pollEntry)
	}
	e := &pollEntry{f: f, dup: dup, fd: fd, dev: st.Dev, ino: st.Ino, refs: 1}
	p.m[fd] = e
	return e, nil
}

func (p *pollRegistry) release(e *pollEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.refs--; e.refs > 0 {
		return
	}
	if p.m[e.fd] == e {
		delete(p.m, e.fd)
	}
	e.f.Close()
	unix.Close(e.dup)
}

// blocking performs j in the calling goroutine.
func (j *ioJob) blocking(ctx context.Context) int64 {
	fd := int(j.fd)
	if fd < 0 {
		return -int64(unix.EBADF) // poll(2) would ignore it and wait forever
	}
	switch j.op {
	case uring.OpClose:
		return errnoResult(0, unix.Close(fd))
	case uring.OpConnect:
		return j.connect(ctx)
	}
	if j.failsAtOnce(fd) {
		return errnoResult(j.call())
	}
	events := int16(unix.POLLIN)
	if j.op == uring.OpWrite || j.op == uring.OpSend {
		events = unix.POLLOUT
	}
	peer := waitsForPeer(fd)
	for {
		if r, ok := waitReady(ctx, fd, events); !ok {
			if r == int64(codeECANCELED) {
				return j.cancelled()
			}
			return r
		}
		r, errno := j.callReady(fd, peer)
		if errno == unix.EAGAIN || errno == unix.EINTR {
			continue // raced with another reader, or not ready after all
		}
		return errnoResult(r, errno)
	}
}

// waitsForPeer reports whether a call on fd may wait for another party for
// ever: fd is neither a regular file nor a block device, whose calls wait
// for the device only.
func waitsForPeer(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false // the call reports the error
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFBLK:
		return false
	}
	return true
}

// callReady makes j's call on fd, which poll(2) has just reported ready.
// Where fd may wait for a peer (waitsForPeer) the call must not wait: the
// descriptor is the C program's and may be in blocking mode, another
// reader may have taken what poll saw, or a write may need more room than
// there is, and a call blocked there would hold the operation, and
// faio_runtime_free, for ever (a 4 MiB write to a pipe nobody read did).
// A read or a write is made with RWF_NOWAIT (preadv2, pwritev2): EAGAIN
// where it would wait, and a short count where only part fits, as the
// ring completes it. An accept is made with the listening socket
// non-blocking for the call (see acceptNoWait). A descriptor that refuses
// RWF_NOWAIT (a terminal; timerfd, signalfd and inotify descriptors), or a
// kernel or a seccomp filter without preadv2, gets the plain call, which
// may block as before: making a terminal non-blocking would also make it
// so for the shell that shares it.
func (j *ioJob) callReady(fd int, peer bool) (uintptr, error) {
	if peer {
		switch j.op {
		case uring.OpRead, uring.OpWrite:
			if r, ok, err := j.rwNoWait(fd); ok {
				return r, err
			}
		case uring.OpAccept:
			return acceptNoWait(fd, j.flags)
		}
	}
	return j.call()
}

// rwNoWait makes j's read or write on fd with RWF_NOWAIT; ok is false if
// fd or the kernel does not take the flag.
func (j *ioJob) rwNoWait(fd int) (r uintptr, ok bool, err error) {
	iov := [][]byte{j.buf}
	call := func(off int64) (int, error) {
		if j.op == uring.OpWrite {
			return unix.Pwritev2(fd, iov, off, unix.RWF_NOWAIT)
		}
		return unix.Preadv2(fd, iov, off, unix.RWF_NOWAIT)
	}
	off := int64(j.off)
	if j.off == uring.CurrentPos {
		off = -1
	}
	n, err := call(off)
	if err == unix.ESPIPE && j.off == 0 {
		// Offset 0 on a descriptor without a position means the
		// current one, as in callOn.
		n, err = call(-1)
	}
	switch err {
	case nil:
		return uintptr(n), true, nil
	case unix.EOPNOTSUPP, unix.ENOSYS, unix.EPERM:
		// EPERM: a seccomp filter refusing preadv2 so; a file that
		// refuses the write itself refuses the plain call too.
		return 0, false, nil
	}
	return 0, true, err
}

// acceptMu serialises the accepts that make a blocking listening socket
// non-blocking for their call, so that none restores the flags while
// another's call runs.
var acceptMu sync.Mutex

// acceptNoWait makes j's accept4 on fd without waiting: a listening socket
// the C program left blocking is non-blocking for the duration of the
// call, its flags restored afterwards, as connect does for its own. The
// flags belong to the open file description: at that instant an accept on
// the socket elsewhere (another thread of the program, or a process it
// shares the socket with, as a pre-fork server does) fails with EAGAIN,
// and a change of its flags by the program is undone.
func acceptNoWait(fd, flags int) (uintptr, error) {
	acceptMu.Lock()
	defer acceptMu.Unlock()
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return 0, err
	}
	if fl&unix.O_NONBLOCK == 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl|unix.O_NONBLOCK); err != nil {
			return 0, err
		}
		defer unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl)
	}
	r, _, errno := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(fd), 0, 0, uintptr(flags), 0, 0)
	return r, errnoErr(errno)
}

// failsAtOnce reports whether j's call fails on fd without waiting where
// poll(2) would never report fd ready for it: polling first would hold the
// operation, and a faio_block_on above it, until shutdown, while the ring
// fails it at once. So are a read of a descriptor open only for writing (a
// pipe's write end) and a write of one open only for reading (EBADF), a
// read or write of a listening socket (ENOTCONN, EPIPE), and an accept on
// anything but a listening socket (ENOTSOCK, EINVAL, EOPNOTSUPP) or with
// flags accept4 refuses (EINVAL), and the calls refusedBySpecial lists. A
// receive or send with MSG_DONTWAIT never waits either: it is made once,
// as the ring makes it.
func (j *ioJob) failsAtOnce(fd int) bool {
	if (j.op == uring.OpRecv || j.op == uring.OpSend) && j.flags&unix.MSG_DONTWAIT != 0 {
		return true
	}
	acceptConn, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	listening := err == nil && acceptConn != 0
	switch j.op {
	case uring.OpAccept:
		return !listening || j.flags&^(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC) != 0
	case uring.OpRead, uring.OpWrite:
		if listening {
			return true
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return true // a bad descriptor: the call says so
		}
		if j.op == uring.OpRead && flags&unix.O_ACCMODE == unix.O_WRONLY ||
			j.op == uring.OpWrite && flags&unix.O_ACCMODE == unix.O_RDONLY {
			return true
		}
		return j.refusedBySpecial(fd)
	}
	return false
}

// signalfdSiginfo is sizeof(struct signalfd_siginfo), the least a read of
// a signalfd takes.
const signalfdSiginfo = 128

// refusedBySpecial reports whether fd is one of the kernel's special
// descriptors (an anonymous inode) that fails j, a read or a write, at
// once with EINVAL while poll(2) would not report it ready for the call
// until a value, an expiry or a signal comes, if ever: a read shorter
// than what it hands out (8 bytes from an eventfd or a timerfd, a struct
// signalfd_siginfo from a signalfd) and a write to one that takes none.
// The ring fails them at once.
func (j *ioJob) refusedBySpecial(fd int) bool {
	kind, ok := anonInode(fd)
	if !ok {
		return false
	}
	minRead, writable := 0, true
	switch kind {
	case "anon_inode:[eventfd]":
		minRead = 8
	case "anon_inode:[timerfd]":
		minRead, writable = 8, false
	case "anon_inode:[signalfd]":
		minRead, writable = signalfdSiginfo, false
	default:
		return false
	}
	if j.op == uring.OpWrite {
		return !writable
	}
	return len(j.buf) < minRead
}

// anonInode returns what /proc names fd's file ("anon_inode:[eventfd]",
// ...) if it is an anonymous inode, which has no file type; ok is false
// for any other file, or without /proc.
func anonInode(fd int) (kind string, ok bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != 0 {
		return "", false
	}
	buf := make([]byte, 64)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
	if err != nil {
		return "", false
	}
	return string(buf[:n]), true
}

// waitReady polls fd for events until it is ready (true), ctx ends
// (FAIO_ECANCELED) or poll fails (its negated errno).
func waitReady(ctx context.Context, fd int, events int16) (int64, bool) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
	for {
		if ctx.Err() != nil {
			return int64(codeECANCELED), false
		}
		n, err := unix.Poll(fds, pollSlice)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return errnoResult(0, err), false
		case n > 0:
			// Ready, or an error or hang-up the call will report.
			return 0, true
		}
	}
}

// call makes j's system call once; a socket call does not wait.
func (j *ioJob) call() (uintptr, error) { return j.callOn(int(j.fd)) }

// callOn is call on descriptor fd in place of j's.
func (j *ioJob) callOn(fdn int) (uintptr, error) {
	fd, b := uintptr(fdn), j.buf
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	var r uintptr
	var errno syscall.Errno
	switch j.op {
	case uring.OpRead, uring.OpWrite:
		trap := uintptr(unix.SYS_PREAD64)
		if j.op == uring.OpWrite {
			trap = unix.SYS_PWRITE64
		}
		if j.off == uring.CurrentPos {
			trap = unix.SYS_READ
			if j.op == uring.OpWrite {
				trap = unix.SYS_WRITE
			}
		}
		r, _, errno = unix.Syscall6(trap, fd, uintptr(p), uintptr(len(b)), uintptr(j.off), 0, 0)
		if errno == unix.ESPIPE && j.off == 0 {
			// A descriptor without a position (a pipe, a socket):
			// the ring reads and writes it at offset 0 as at -1,
			// with read(2) and write(2), and so does this.
			trap = unix.SYS_READ
			if j.op == uring.OpWrite {
				trap = unix.SYS_WRITE
			}
			r, _, errno = unix.Syscall(trap, fd, uintptr(p), uintptr(len(b)))
		}
	case uring.OpRecv:
		r, errno = j.sockCall(fd, unix.SYS_RECVFROM)
	case uring.OpSend:
		r, errno = j.sockCall(fd, unix.SYS_SENDTO)
	case uring.OpAccept:
		r, _, errno = unix.Syscall6(unix.SYS_ACCEPT4, fd, 0, 0, uintptr(j.flags), 0, 0)
	default:
		errno = unix.EINVAL
	}
	if errno != 0 {
		return r, errno
	}
	return r, nil
}

// sockCall makes j's receive or send (trap) on fd without waiting. Unless
// j.all, that is one call. With j.all (MSG_WAITALL on a stream socket) the
// calls go on while they transfer bytes, adding up in j.moved, until the
// buffer is done or the peer has shut down its side; the result is then
// the total. A call that fails after bytes were transferred returns them
// and drops its errno, as the ring does, except EAGAIN and EINTR, after
// which the caller calls again (once the socket is ready, for EAGAIN).
func (j *ioJob) sockCall(fd, trap uintptr) (uintptr, syscall.Errno) {
	for {
		b := j.buf[j.moved:]
		var p unsafe.Pointer
		if len(b) > 0 {
			p = unsafe.Pointer(&b[0])
		}
		r, _, errno := unix.Syscall6(trap, fd, uintptr(p), uintptr(len(b)), uintptr(j.flags|unix.MSG_DONTWAIT), 0, 0)
		if !j.all {
			return r, errno
		}
		switch {
		case errno == unix.EAGAIN || errno == unix.EINTR:
			return r, errno
		case errno != 0 && j.moved == 0:
			return r, errno
		case errno != 0 || r == 0:
			return uintptr(j.moved), 0
		}
		j.moved += int(r)
		if j.moved == len(j.buf) {
			return uintptr(j.moved), 0
		}
	}
}

// cancelled is the result of j when the runtime's shutdown ends its wait:
// FAIO_ECANCELED, or the bytes a MSG_WAITALL transfer had moved by then,
// which the ring reports too.
// pollerFailed is the result of an operation whose wait failed with pe:
// what it moved, if anything, else the negated errno that showed the loss
// (EBADF mostly), else FAIO_EINTERNAL.
func (j *ioJob) pollerFailed(pe *runtime.PollerError) int64 {
	if j.moved > 0 {
		return int64(j.moved)
	}
	if errno := syscall.Errno(0); errors.As(pe.Err, &errno) && errno != 0 {
		return -int64(errno)
	}
	return int64(codeEINTERNAL)
}

func (j *ioJob) cancelled() int64 {
	if j.moved > 0 {
		return int64(j.moved)
	}
	return int64(codeECANCELED)
}

// streamSocket reports whether fd is a stream or sequenced-packet socket,
// on which MSG_WAITALL waits for the whole buffer (on a datagram socket it
// does nothing).
func streamSocket(fd int) bool {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	return err == nil && (typ == unix.SOCK_STREAM || typ == unix.SOCK_SEQPACKET)
}

// connect connects the C program's socket: non-blocking for the duration
// (so shutdown can interrupt it), its flags restored afterwards.
func (j *ioJob) connect(ctx context.Context) int64 {
	fd := int(j.fd)
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return errnoResult(0, err)
	}
	if flags&unix.O_NONBLOCK == 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags|unix.O_NONBLOCK); err != nil {
			return errnoResult(0, err)
		}
		defer unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags)
	}
	_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(j.addr)), uintptr(j.addrLen))
	if errno != unix.EINPROGRESS && errno != unix.EINTR {
		return errnoResult(0, errnoErr(errno))
	}
	for {
		if r, ok := waitReady(ctx, fd, unix.POLLOUT); !ok {
			return r
		}
		soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return errnoResult(0, err)
		}
		switch errno := syscall.Errno(soerr); errno {
		case unix.EINPROGRESS, unix.EALREADY:
		case 0:
			return 0
		default:
			return errnoResult(0, errno)
		}
	}
}

func errnoErr(errno syscall.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

// errnoResult is r, or the negated errno of err.
func errnoResult(r uintptr, err error) int64 {
	if errno, ok := err.(syscall.Errno); ok && errno != 0 {
		return -int64(errno)
	}
	if err != nil {
		return int64(codeEINTERNAL)
	}
	return int64(r)
}
