package aio

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"net"
	"os"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// How an upload (a connection's bytes into a file: io.Copy(file.IO(),
// netConn), or io.Copy(file.IO(), io.LimitReader(netConn, n))) avoids
// copying them through user memory, as package os does for a
// *net.TCPConn source: splice(2) from the socket into a pipe, then from
// the pipe into the file, a pipeful at a time.
//
// The socket's half waits as a Read does. A task on io_uring first waits
// for the socket to be readable with a ring poll (IORING_OP_POLL_ADD for
// POLLIN|POLLRDHUP), then submits IORING_OP_SPLICE. The kernel runs every
// splice in its async workers (io-wq), where a splice from an empty socket
// would block until bytes arrive, holding one kernel thread per slow
// sender (and the runtime leaves io-wq's unbound threads unbounded, see
// FileIOThreads in package driver); once the socket is readable the splice
// takes what is there and returns without waiting for more, so the wait
// holds no thread. The poll precedes every splice, also after one that
// filled its whole request: a poll of a readable socket completes at
// submission, cheap beside the splice's trip to io-wq (a 128 MiB loopback
// upload took as long with a poll before every splice as with none, or
// with none after a full one), and it keeps a sender that stops on a
// pipeful's boundary from holding a thread. A socket a goroutine made
// non-blocking says EAGAIN to the splice instead and the task waits in the
// netpoller. The poll ends as the splice's wait did: when ctx ends (its
// error), and at Close, whose shutdown makes the socket readable and the
// splice then return 0, which is net.ErrClosed once the socket is closing.
// The poll moves no byte and uses no memory of the call's, so the count
// and the pipe below are as the splices leave them. A plain goroutine, and
// a task on the portable backend, call splice(2) on the non-blocking
// socket and wait for readiness as Read does (the netpoller, the runtime's
// readiness poller). The end of the call's context ends that wait, as it
// ends a Read: for NetConn.WriteTo and FileIO.ReadFrom the connection's
// read deadline, as for NetConn.Read (whose waits, being a net.Conn's,
// know no task and no context of the caller). Close's shutdown ends it
// with net.ErrClosed.
//
// The file's half runs with the caller's context stripped of its
// cancellation: the bytes in the pipe have left the socket, and a deadline
// passing must not drop them. It is a file write, which never waits for a
// peer, on the ring, on the blocking pool or in the goroutine, at the file
// position, under the position lock.
//
// So the count is exact: every byte counted is in the file, and a copy
// cut short by a deadline, a cancellation or Close has written every byte
// it took from the socket. Only a failing file write (ENOSPC, EIO) loses
// what the pipe held then, as package os's splice does.
//
// The pipe is the call's own, closed when it returns; every operation
// that used it has completed by then (a cancelled ring operation is
// waited for), so its numbers are never closed under the kernel.

// pollOp waits on a ring until fd is ready for events
// (IORING_OP_POLL_ADD; errors and hang-ups wake it too): a socket to be
// readable, or shut down for reading by its peer or Close, before an
// upload's splice (readable), or to have room, before SendFile's
// (writable). It completes with the ready mask, or -errno.
type pollOp struct {
	fd     int
	events uint32
}

// readable waits for fd to be readable or shut down for reading.
func readable(fd int) *pollOp { return &pollOp{fd: fd, events: unix.POLLIN | unix.POLLRDHUP} }

// writable waits for fd to have room for writing.
func writable(fd int) *pollOp { return &pollOp{fd: fd, events: unix.POLLOUT} }

// Prep fills sqe for the poll.
func (o *pollOp) Prep(sqe *uring.SQE) {
	sqe.PrepPollAdd(o.fd, o.events)
}

// awaitOnRing submits the poll o on the ring of ctx's task, for a splice
// of the connection c. It returns the splice's error if the wait ended
// the call (net.ErrClosed once Close began, else ctx's or the ring's), and
// noRing if the task has no ring after all, when the splice is to wait in
// the netpoller instead. A poll that fails with -errno is left to the
// splice, which reports the socket's error.
func (c *Conn) awaitOnRing(ctx context.Context, o *pollOp) (noRing bool, err error) {
	_, perr := runtime.SubmitOn(ctx, c.guard.rt, o)
	switch {
	case perr == runtime.ErrNoRing:
		return true, nil
	case perr != nil && c.guard.closing():
		return false, net.ErrClosed
	}
	return false, perr
}

// cannotSplice reports whether err, a splice's failure before any byte
// moved, says that the descriptors cannot splice (an old kernel, a file
// system or socket without splice), so that a copy through a buffer is to
// be made instead.
func cannotSplice(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)
}

// spliceToFile moves up to limit bytes (-1: up to the end of the stream)
// from the connection into f at f's file position, which it advances, under
// the file's position lock and the connection's read lock. handled is
// false when the pair cannot splice: f is not a regular file, or is opened
// with O_APPEND or O_DIRECT (splice refuses both), the socket is not a
// stream (unixpacket), or the kernel refused the first splice; the caller
// then copies through a buffer, after the written bytes (which a refusal
// of the file's half leaves: they were taken from the socket already).
//
// Errors are the socket's (ctx.Err(), net.ErrClosed, an *os.SyscallError
// "splice") as they are, and the file's inside a *fs.PathError.
func (c *Conn) spliceToFile(ctx context.Context, f *File, limit int64) (written int64, handled bool, err error) {
	if unixSotype(c.network) == unix.SOCK_SEQPACKET || !f.regular || f.appends || f.direct != nil {
		return 0, false, nil
	}
	if limit < 0 {
		limit = math.MaxInt64
	}
	if err := f.lockPos(ctx, "write", true); err != nil {
		return 0, true, err
	}
	defer f.unlockPos(ctx, true)
	if err := c.rl.lock(ctx); err != nil {
		return 0, true, err
	}
	defer c.rl.unlock()
	if !c.guard.incref() {
		return 0, true, net.ErrClosed
	}
	defer c.guard.decref(ctx)
	p, err := newSplicePipe()
	if err != nil {
		return 0, true, err
	}
	defer p.close()
	return c.spliceThrough(ctx, p, f, limit)
}

// spliceThrough is spliceToFile's loop: socket to p, p to f at its file
// position, until limit bytes, the end of the stream or an error. The
// caller holds the locks and references.
func (c *Conn) spliceThrough(ctx context.Context, p *splicePipe, f *File, limit int64) (written int64, handled bool, err error) {
	fill := &spliceOp{fdIn: c.guard.fd, offIn: uring.NoOffset, fdOut: p.w, offOut: uring.NoOffset, flags: unix.SPLICE_F_MOVE}
	// At the file position, as os.File.ReadFrom splices, which also
	// takes files that refuse an offset (pwrite), as some of /proc do.
	drain := &spliceOp{fdIn: p.r, offIn: uring.NoOffset, fdOut: f.guard.fd, offOut: uring.NoOffset, flags: unix.SPLICE_F_MOVE}
	// See above: what left the socket goes into the file whatever ctx does.
	wctx := context.WithoutCancel(ctx)
	// See above: on a ring, each fill waits for the socket with a poll
	// first, so that the splice finds bytes and holds no io-wq thread.
	var ready *pollOp
	if c.onRing(ctx) {
		ready = readable(c.guard.fd)
	}
	for written < limit {
		if ready != nil {
			noRing, err := c.awaitOnRing(ctx, ready)
			if err != nil {
				return written, true, err
			}
			if noRing {
				ready = nil // the splice waits in the netpoller
			}
		}
		fill.n = int(min(limit-written, int64(p.size)))
		res, serr := c.guard.submitPoll(ctx, fill, false)
		if err := ioErr("splice", res, serr); err != nil {
			switch {
			case c.guard.closing():
				return written, true, net.ErrClosed
			case written == 0 && cannotSplice(err):
				return 0, false, nil
			}
			return written, true, err
		}
		if res.Res == 0 {
			if c.guard.closing() {
				// Close's shutdown, not the peer's end of the stream.
				return written, true, net.ErrClosed
			}
			return written, true, nil
		}
		for inPipe := int(res.Res); inPipe > 0; {
			drain.n = inPipe
			res, serr := submit(wctx, f.guard.rt, drain)
			err := ioErr("splice", res, serr)
			if err == nil && res.Res == 0 {
				err = io.ErrShortWrite
			}
			if err != nil {
				if written == 0 && cannotSplice(err) {
					// The file's system cannot splice (no
					// splice_write): the bytes already in the pipe
					// are written through a buffer, and the caller
					// copies the rest the same way.
					n, werr := f.drainByCopy(wctx, p, inPipe)
					if werr != nil {
						return n, true, pathError("write", f.name, werr)
					}
					return n, false, nil
				}
				return written, true, pathError("write", f.name, err)
			}
			inPipe -= int(res.Res)
			written += int64(res.Res)
		}
	}
	return written, true, nil
}

// drainByCopy writes the n bytes that p holds into f at its file position
// through a buffer: read(2) of the pipe, which holds them, so it does not
// wait, and a write of the file. It returns how many it wrote.
func (f *File) drainByCopy(ctx context.Context, p *splicePipe, n int) (int64, error) {
	buf := make([]byte, n)
	got := 0
	for got < n {
		m, err := unix.Read(p.r, buf[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, os.NewSyscallError("read", err)
		}
		if m == 0 {
			break
		}
		got += m
	}
	op := fdOps.Get().(*fdOp)
	w, err := f.transferAll(ctx, op, uring.OpWrite, buf[:got], atPosition, false)
	fdOps.Put(op)
	return int64(w), err
}

// WriteTo copies from the connection to w until the end of the stream,
// like net.TCPConn.WriteTo, so that io.Copy(file.IO(), netConn) moves the
// bytes into the file without copying them through user memory (see
// spliceToFile), at and advancing the file position, when w is the FileIO
// of a regular file opened without O_APPEND and O_DIRECT. Any other
// writer, and a pair the kernel cannot splice, is copied through a buffer,
// with Read. The read deadline bounds the copy's waits for the peer, as it
// bounds Read. The end of the stream is not an error; any other error, the
// connection's or w's, is a *net.OpError "writeto", as
// net.TCPConn.WriteTo's. The count is exact: every byte counted was
// written to w.
func (n *NetConn) WriteTo(w io.Writer) (int64, error) {
	if !n.ok() {
		return 0, invalidSocket("writeto")
	}
	var written int64
	if x, ok := w.(*FileIO); ok && x.File().ok() {
		ctx := n.rd.context()
		m, handled, err := n.c.spliceToFile(ctx, x.f, -1)
		if handled {
			return m, n.copyErr(ctx, "writeto", err)
		}
		written = m
	}
	// Hiding WriteTo keeps io.Copy from calling it again (w's ReadFrom
	// then sees a reader it does not know, and copies with a buffer).
	m, err := io.Copy(w, readerOnly{n})
	written += m
	if err != nil {
		err = netError("writeto", n.c.network, n.c.laddr, n.c.raddr, err)
	}
	return written, err
}

var _ io.WriterTo = (*NetConn)(nil)

// readerOnly hides every method of a Reader but Read.
type readerOnly struct{ io.Reader }

// ReadFrom copies r to the file at and advancing the file position until
// r's end, like os.File.ReadFrom, so that io.Copy(file.IO(),
// io.LimitReader(netConn, n)) (and a call with the *NetConn itself) moves
// the bytes from the connection into the file without copying them
// through user memory (see NetConn.WriteTo), up to the limit, under the
// connection's read deadline. Any other reader, a File that is not a
// regular file or is opened with O_APPEND or O_DIRECT, and a pair the
// kernel cannot splice, are copied with io.Copy's buffer, through Write
// (whose errors are returned as they are, as os.File.ReadFrom returns
// them). The end of r is not an error. An error of the splice, the
// connection's as well as the file's, is a *fs.PathError "write", as
// os.File.ReadFrom's: matching os.ErrDeadlineExceeded when the read
// deadline passed, net.ErrClosed when the connection was closed.
func (x *FileIO) ReadFrom(r io.Reader) (int64, error) {
	f := x.File()
	if !f.ok() {
		return 0, invalidFile("write")
	}
	lr, _ := r.(*io.LimitedReader)
	src, limit := r, int64(-1)
	if lr != nil {
		src, limit = lr.R, lr.N
	}
	var written int64
	if nc, ok := src.(*NetConn); ok && nc.ok() {
		if lr != nil && lr.N <= 0 {
			return 0, nil
		}
		ctx := nc.rd.context()
		m, handled, err := nc.c.spliceToFile(ctx, f, limit)
		if lr != nil {
			lr.N -= m
		}
		if handled {
			return m, spliceFileErr(ctx, f, err)
		}
		written = m
	}
	// Hiding ReadFrom keeps io.Copy from calling it again.
	m, err := io.Copy(writerOnly{x}, r)
	return written + m, err
}

var _ io.ReaderFrom = (*FileIO)(nil)

// spliceFileErr is FileIO.ReadFrom's error for a splice that ran with ctx,
// the source's read deadline context: a *fs.PathError "write" as
// os.File.ReadFrom's, os.ErrDeadlineExceeded inside it when the deadline
// ended the copy.
func spliceFileErr(ctx context.Context, f *File, err error) error {
	if err == nil {
		return nil
	}
	pe, ok := err.(*fs.PathError)
	if !ok {
		pe = &fs.PathError{Op: "write", Path: f.name, Err: err}
	}
	if cerr := ctx.Err(); cerr != nil && errors.Is(pe.Err, cerr) && errors.Is(context.Cause(ctx), os.ErrDeadlineExceeded) {
		e := *pe
		e.Err = os.ErrDeadlineExceeded
		return &e
	}
	return pe
}
