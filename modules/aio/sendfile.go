package aio

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"syscall"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// How SendFile moves a file's bytes to a socket without copying them
// through user memory.
//
// A task on io_uring splices: IORING_OP_SPLICE from the file into a pipe
// (the kernel takes references to the page cache's pages), then from the
// pipe into the socket, repeated until the pipe is empty, and again for
// the next pipeful. io_uring runs every splice in its async workers
// (io-wq), where a splice into a socket whose send buffer is full blocks
// until the peer reads, holding one kernel thread per slow reader. So
// before each pipe -> socket splice the task waits for room with a ring
// poll (IORING_OP_POLL_ADD for POLLOUT), which holds no thread, and the
// splice moves at most half the room the send buffer then has (SO_MEMINFO:
// its size less what it holds; the other half covers the kernel's memory
// per packet, which the buffer also counts): a poll alone is not enough,
// since the kernel's send (splice_to_socket on a socket that is not
// O_NONBLOCK) waits for room for everything it is given, and a pipeful of
// 1 MiB is more than a poll finds in a small buffer (32 SendFiles through
// 64 KiB send buffers to readers that paused held 32 iou-wrk threads with
// the poll alone, none with both). Cancelling ctx ends the poll, and
// Close's shutdown wakes it, as they ended the splice's wait. A socket
// that a goroutine made non-blocking says EAGAIN instead, and the task
// then waits in the netpoller as for any socket operation.
//
// A plain goroutine, and a task on the portable backend, call sendfile(2)
// on the non-blocking socket and wait in the netpoller when it is full,
// as package net does.
//
// The pipe is the call's own: bytes a cancellation leaves in it are
// discarded with it, and counted as not sent.

// spliceOp is splice(2) from fdIn (at offIn, or uring.NoOffset for a pipe
// or a socket) to fdOut (at offOut, or uring.NoOffset likewise): a file
// into a pipe and the pipe into a socket (SendFile), or a socket into a
// pipe and the pipe into a file (NetConn.WriteTo, FileIO.ReadFrom).
type spliceOp struct {
	fdIn, fdOut   int
	offIn, offOut int64
	n             int
	flags         uint32
}

// Prep fills sqe for splice.
func (o *spliceOp) Prep(sqe *uring.SQE) {
	sqe.PrepSplice(o.fdIn, o.offIn, o.fdOut, o.offOut, uint32(min(o.n, maxRW)), o.flags)
}

// direct splices in the calling goroutine: between the pipe and a socket
// a goroutine made non-blocking, which then says EAGAIN when full or
// empty, or between a file and the pipe.
func (o *spliceOp) direct() runtime.Result {
	var inp, outp *int64
	if o.offIn != uring.NoOffset {
		off := o.offIn
		inp = &off
	}
	if o.offOut != uring.NoOffset {
		off := o.offOut
		outp = &off
	}
	return sys(func() (uintptr, uintptr, syscall.Errno) {
		return unix.Syscall6(unix.SYS_SPLICE, uintptr(o.fdIn), uintptr(unsafe.Pointer(inp)), uintptr(o.fdOut),
			uintptr(unsafe.Pointer(outp)), uintptr(min(o.n, maxRW)), uintptr(o.flags))
	})
}

// maxSendfile bounds one sendfile(2), as in package net, so that a
// cancellation or Close is noticed between the calls.
const maxSendfile = 4 << 20

// sendfileOp is sendfile(2) of n bytes of in at off to the socket out.
// It has no io_uring form: SendFile uses it only where the calling task
// has no ring (portable backend) and in plain goroutines.
type sendfileOp struct {
	out, in int
	off     int64
	n       int
}

// Prep is never called: submitRing sends an operation without a ring
// form (noRingForm) to submitNoRing, whatever the calling task's backend.
func (o *sendfileOp) Prep(*uring.SQE) {
	panic("faio/aio: sendfile has no io_uring form")
}

// noRingForm marks sendfile as an operation that never goes to a ring. A
// task that has one splices instead (see onRing), but one that uses a
// connection of a portable runtime with a context naming another
// runtime's task took this path, and the ring's Prep ended the process
// (found by a reviewer).
func (o *sendfileOp) noRingForm() {}

// readsDisk marks sendfile as an operation that may read a file's pages
// from the disk: submitPoll runs a portable task's try on the blocking
// pool instead of the worker.
func (o *sendfileOp) readsDisk() {}

func (o *sendfileOp) direct() runtime.Result {
	off := o.off
	return sys(func() (uintptr, uintptr, syscall.Errno) {
		return unix.Syscall6(unix.SYS_SENDFILE, uintptr(o.out), uintptr(o.in), uintptr(unsafe.Pointer(&off)),
			uintptr(min(o.n, maxSendfile)), 0, 0)
	})
}

// errNotRegular is SendFile's error for a File that is not a regular file
// (a pipe, a socket, a device): splice and sendfile need the page cache.
var errNotRegular = errors.New("not a regular file")

// SendFile sends n bytes of f, from offset off, over the connection
// without copying them through user memory: on the io_uring backend a task
// splices them through a pipe (IORING_OP_SPLICE), elsewhere sendfile(2)
// runs with the socket's wait in Go's netpoller. n < 0 sends up to the end
// of the file. It neither uses nor moves f's file position, and like
// Write it is never interleaved with another write. A SendFile waiting for
// a slow reader on the ring waits with a ring poll and holds no kernel
// worker thread (io-wq), though each splice runs in one for as long as it
// moves its bytes.
//
// It returns the number of bytes sent. Like net.TCPConn.ReadFrom (and
// io.Copy of an io.LimitReader), the end of the file is not an error: if
// the file ends before n bytes, SendFile returns the bytes there were and
// nil (0 and nil from an offset at or past the end, however large), so a
// caller that needs exactly n compares the count. Otherwise a
// count below n comes with an error: ctx's (a cancellation cuts the
// transfer short, promptly, and leaves the connection and f open),
// net.ErrClosed after Close, one matching fs.ErrClosed if f is closed, or
// the kernel's (EPIPE, ECONNRESET ...). f must be a regular file, of a
// file system that can splice and sendfile (most can; some files of /proc
// make SendFile fail with an error matching syscall.EINVAL, and
// NetConn.ReadFrom copy them through a buffer instead); an offset below 0
// is an error, and so is a zero or nil f (wrapping os.ErrInvalid).
func (c *Conn) SendFile(ctx context.Context, f *File, off int64, n int64) (int64, error) {
	switch {
	case !c.ok():
		return 0, invalidSocket("sendfile")
	case ctx == nil:
		return 0, c.nilContext("sendfile")
	case !f.ok():
		return 0, c.opError("sendfile", invalidFile("sendfile"))
	case off < 0:
		return 0, c.opError("sendfile", pathError("sendfile", f.name, errNegativeOffset))
	case !f.regular:
		return 0, c.opError("sendfile", pathError("sendfile", f.name, errNotRegular))
	case n < 0 || n > math.MaxInt64-off:
		// No file reaches past the largest offset: the kernel would
		// call the bytes beyond it an overflow (EINVAL) rather than the
		// end of the file they are.
		n = math.MaxInt64 - off
	}
	if err := c.wl.lock(ctx); err != nil {
		return 0, c.opError("sendfile", err)
	}
	defer c.wl.unlock()
	if !c.guard.incref() {
		return 0, c.opError("sendfile", net.ErrClosed)
	}
	defer c.guard.decref(ctx)
	if !f.guard.incref() {
		return 0, c.opError("sendfile", pathError("sendfile", f.name, fs.ErrClosed))
	}
	defer f.guard.decref(ctx)
	if n == 0 {
		return 0, nil
	}
	var sent int64
	var err error
	spliced := false
	if c.onRing(ctx) {
		sent, spliced, err = c.splice(ctx, f, off, n)
	}
	if !spliced {
		sent, err = c.sendfile(ctx, f, off, n)
	}
	if c.guard.closing() && (err != nil || sent == 0) {
		err = net.ErrClosed
	}
	if err != nil {
		err = c.opError("sendfile", err)
	}
	return sent, err
}

// onRing reports whether the caller may be a task whose operations go to
// a ring: ctx's task's backend decides if ctx names one. A ctx that names
// no task (a NetConn's deadline context) says nothing of the calling
// task, whose ring SubmitOn uses and whose runtime need not be the
// connection's: the caller then tries the ring, which says
// runtime.ErrNoRing where there is none.
func (c *Conn) onRing(ctx context.Context) bool {
	if !runtime.OnTask() {
		return false
	}
	if t := runtime.Current(ctx); t != nil {
		return t.Runtime().Backend() != runtime.BackendPortable
	}
	return true
}

// sendfile is SendFile by sendfile(2). The caller holds the write lock and
// references to both descriptors.
func (c *Conn) sendfile(ctx context.Context, f *File, off, n int64) (int64, error) {
	var sent int64
	op := &sendfileOp{out: c.guard.fd, in: f.guard.fd}
	for sent < n {
		op.off, op.n = off+sent, int(min(n-sent, maxSendfile))
		res, serr := c.guard.submitPoll(ctx, op, true)
		if serr == nil && res.Res == -int32(unix.EOVERFLOW) {
			// An offset at or past the largest file size of f's file
			// system, so past its end (splice says 0 there).
			break
		}
		if err := ioErr("sendfile", res, serr); err != nil {
			return sent, err
		}
		if res.Res == 0 {
			break // the end of the file
		}
		sent += int64(res.Res)
	}
	return sent, nil
}

// splice is SendFile by splicing through a pipe on the calling task's ring.
// ok is false, and nothing was sent, when the task has no ring after all.
func (c *Conn) splice(ctx context.Context, f *File, off, n int64) (sent int64, ok bool, err error) {
	// The first wait for room, before the pipe is made, also finds out
	// whether the calling task has a ring (see onRing); the first drain
	// then goes without another.
	room := writable(c.guard.fd)
	if noRing, err := c.awaitOnRing(ctx, room); err != nil {
		return 0, true, err
	} else if noRing {
		return 0, false, nil
	}
	waited := true
	p, err := newSplicePipe()
	if err != nil {
		return 0, true, err
	}
	defer p.close()
	fill := &spliceOp{fdIn: f.guard.fd, fdOut: p.w, offOut: uring.NoOffset, flags: unix.SPLICE_F_MOVE}
	drain := &spliceOp{fdIn: p.r, fdOut: c.guard.fd, offIn: uring.NoOffset, offOut: uring.NoOffset, flags: unix.SPLICE_F_MOVE}
	for sent < n {
		fill.offIn, fill.n = off+sent, int(min(n-sent, int64(p.size)))
		res, serr := runtime.SubmitOn(ctx, c.guard.rt, fill)
		if serr == runtime.ErrNoRing && sent == 0 {
			return 0, false, nil
		}
		if err := ioErr("splice", res, serr); err != nil {
			return sent, true, err
		}
		if res.Res == 0 {
			break // the end of the file
		}
		for inPipe := int(res.Res); inPipe > 0; {
			if room != nil && !waited {
				noRing, err := c.awaitOnRing(ctx, room)
				if err != nil {
					return sent, true, err
				}
				if noRing {
					room = nil // the splice waits in the netpoller
				}
			}
			waited = false
			drain.n = inPipe
			if room != nil {
				drain.n = min(inPipe, sendRoom(c.guard.fd))
			}
			res, serr := c.guard.submitPoll(ctx, drain, true)
			if err := ioErr("splice", res, serr); err != nil {
				return sent, true, err
			}
			if res.Res == 0 {
				return sent, true, io.ErrShortWrite
			}
			inPipe -= int(res.Res)
			sent += int64(res.Res)
		}
	}
	return sent, true, nil
}

// The indices of SO_MEMINFO's values (linux/sock_diag.h).
const (
	skMeminfoWmemAlloc  = 2
	skMeminfoSndbuf     = 3
	skMeminfoWmemQueued = 5
	skMeminfoVars       = 9
)

// sendRoom is how many bytes a splice may move into the socket fd without
// waiting for room in its send buffer: half the room there is (the
// buffer's size less what it holds, SO_MEMINFO), the other half left for
// the kernel's own memory per packet, which the buffer also counts. At
// least 1, and no limit if the socket does not say.
func sendRoom(fd int) int {
	var mi [skMeminfoVars]uint32
	size := uint32(unsafe.Sizeof(mi))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&mi)), uintptr(unsafe.Pointer(&size)), 0)
	if e != 0 || size < uint32(unsafe.Sizeof(mi)) {
		return math.MaxInt
	}
	used := max(mi[skMeminfoWmemQueued], mi[skMeminfoWmemAlloc])
	if used >= mi[skMeminfoSndbuf] {
		return 1
	}
	return max(int(mi[skMeminfoSndbuf]-used)/2, 1)
}

// splicePipe is the pipe a splice goes through.
type splicePipe struct {
	r, w int
	size int // its capacity: one fill is at most this
}

// maxPipeSize is the capacity SendFile asks for its pipe, the default
// limit for unprivileged processes (/proc/sys/fs/pipe-max-size), as in
// package net; a pipe of the default 64 KiB serves where it is refused.
const maxPipeSize = 1 << 20

func newSplicePipe() (*splicePipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	p := &splicePipe{r: fds[0], w: fds[1], size: 64 << 10}
	_, _ = unix.FcntlInt(uintptr(p.w), unix.F_SETPIPE_SZ, maxPipeSize)
	if size, err := unix.FcntlInt(uintptr(p.w), unix.F_GETPIPE_SZ, 0); err == nil && size > 0 {
		p.size = size
	}
	return p, nil
}

func (p *splicePipe) close() {
	unix.Close(p.r)
	unix.Close(p.w)
}

// ReadFrom copies r to the connection until r's end, like
// net.TCPConn.ReadFrom, so that io.Copy(netConn, file.IO()) sends the file
// with Conn.SendFile, from and advancing the file position; so does an
// *io.LimitedReader around a *FileIO, up to its limit. Any other reader, a
// File that is not a regular file, and one whose file system can neither
// splice nor sendfile (EINVAL, as some of /proc and /sys) are copied with
// io.Copy's buffer, through Write. The end of r is not an error; any other
// error, r's or the connection's, is a *net.OpError "readfrom", as
// net.TCPConn.ReadFrom's.
func (n *NetConn) ReadFrom(r io.Reader) (int64, error) {
	if !n.ok() {
		return 0, invalidSocket("readfrom")
	}
	var limit int64 = -1
	lr, _ := r.(*io.LimitedReader)
	src := r
	if lr != nil {
		if lr.N <= 0 {
			return 0, nil
		}
		src, limit = lr.R, lr.N
	}
	if x, ok := src.(*FileIO); ok && x.File().ok() && x.f.regular {
		sent, handled, err := n.sendFile(x.f, limit)
		if lr != nil {
			lr.N -= sent
		}
		if handled {
			return sent, err
		}
	}
	// Hiding ReadFrom keeps io.Copy from calling it again.
	copied, err := io.Copy(writerOnly{n}, r)
	if err != nil {
		// As net.TCPConn.ReadFrom wraps its errors, the source's and
		// Write's alike.
		err = netError("readfrom", n.c.network, n.c.laddr, n.c.raddr, err)
	}
	return copied, err
}

// sendFile is ReadFrom of up to limit bytes (-1: all) of f from its file
// position, which it advances. handled is false, and nothing was sent,
// when f's file system cannot splice or sendfile.
func (n *NetConn) sendFile(f *File, limit int64) (sent int64, handled bool, err error) {
	ctx := n.wd.context()
	if err := f.lockPos(ctx, "read", false); err != nil {
		// A closed f: the *fs.PathError that a Read of it would give,
		// inside the "readfrom" error, as net.TCPConn.ReadFrom reports a
		// source it cannot read.
		return 0, true, n.copyErr(ctx, "readfrom", err)
	}
	defer f.unlockPos(ctx, false)
	pos, err := unix.Seek(f.guard.fd, 0, io.SeekCurrent)
	if err != nil {
		return 0, true, n.copyErr(ctx, "readfrom", pathError("seek", f.name, err))
	}
	sent, err = n.c.SendFile(ctx, f, pos, limit)
	if sent == 0 && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)) {
		return 0, false, nil
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "sendfile" {
		// Named as net.TCPConn.ReadFrom names its errors.
		e := *oe
		e.Op = "readfrom"
		err = &e
	}
	if _, serr := unix.Seek(f.guard.fd, pos+sent, io.SeekStart); serr != nil && err == nil {
		err = pathError("seek", f.name, serr)
	}
	return sent, true, n.copyErr(ctx, "readfrom", err)
}

// copyErr is the error of op ("readfrom", "writeto"), an io.Copy fast path
// of the connection that ran with ctx, a deadline context: a deadline
// error if the deadline ended it (see expired), else err inside a
// *net.OpError op, as package net wraps every error of those methods (a
// *net.OpError of the connection is kept as it is).
func (n *NetConn) copyErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	err = expired(ctx, err, op, n.c.network, n.c.laddr, n.c.raddr)
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	return netError(op, n.c.network, n.c.laddr, n.c.raddr, err)
}

var _ io.ReaderFrom = (*NetConn)(nil)

// writerOnly hides every method of a Writer but Write.
type writerOnly struct{ io.Writer }
