package aio

import (
	"context"
	"errors"
	"github.com/faio-go/faio/modules/runtime"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// sock is what TCP and UDP connections share: the guarded descriptor, the
// locks that make concurrent reads (and writes) take turns, and one
// embedded operation per direction, so steady-state I/O allocates nothing.
type sock struct {
	guard        fdGuard
	network      string
	laddr, raddr net.Addr
	stream       bool // 0 bytes received means end of stream
	rl, wl       opLock
	rop, wop     fdOp
}

func (s *sock) opError(op string, err error) error {
	return netError(op, s.network, s.laddr, s.raddr, err)
}

// nilContext is the error of socket method op given a nil ctx.
func (s *sock) nilContext(op string) error { return s.opError(op, runtime.ErrNilContext) }

// noBytes is the outcome of a transfer of no bytes (op: "read", "write"):
// there is nothing to do, but after Close it fails with net.ErrClosed, as
// package net's does.
func (s *sock) noBytes(op string) (int, error) {
	if s.guard.closing() {
		return 0, s.opError(op, net.ErrClosed)
	}
	return 0, nil
}

// xfer receives into or sends from b (opcode OpRecv or OpSend) under l,
// repeating until all of b is transferred when all is set. It returns the
// byte count and nil, io.EOF (a stream's end), net.ErrClosed (Close was
// called: whatever the kernel said is an artefact of it), ctx.Err() or a
// *os.SyscallError.
func (s *sock) xfer(ctx context.Context, l *opLock, op *fdOp, opcode uring.Op, b []byte, flags int, all bool) (int, error) {
	if err := l.lock(ctx); err != nil {
		return 0, err
	}
	// Deferred, so that a panic (in a ctx's method) cannot keep the lock
	// and the reference, on which later operations and Close would wait
	// for ever.
	defer l.unlock()
	if !s.guard.incref() {
		return 0, net.ErrClosed
	}
	defer s.guard.decref(ctx)
	n := 0
	var err error
	for {
		op.opcode, op.fd, op.buf, op.flags = opcode, s.guard.fd, b[n:], flags
		res, serr := s.guard.submitPoll(ctx, op, opcode == uring.OpSend || opcode == uring.OpSendZC)
		if err = ioErr(syscallName(opcode), res, serr); err != nil {
			break
		}
		if res.Res == 0 && len(b) > 0 {
			if opcode == uring.OpSend || opcode == uring.OpSendZC {
				err = io.ErrShortWrite
			} else if s.stream {
				err = io.EOF
			}
			break
		}
		n += int(res.Res)
		if !all || n == len(b) {
			break
		}
	}
	op.buf = nil
	closing := s.guard.closing()
	// After the shutdown of Close a receive returns 0, which a datagram
	// socket would otherwise report as an empty datagram.
	if closing && (err != nil || n == 0 && len(b) > 0) {
		return n, net.ErrClosed
	}
	return n, err
}

func syscallName(opcode uring.Op) string {
	switch opcode {
	case uring.OpRecv:
		return "recv"
	case uring.OpSend, uring.OpSendZC:
		return "send"
	}
	return opcode.String()
}

// read is Read of both kinds of connection.
func (s *sock) read(ctx context.Context, b []byte) (int, error) {
	if len(b) == 0 {
		return s.noBytes("read")
	}
	n, err := s.xfer(ctx, &s.rl, &s.rop, uring.OpRecv, b, 0, false)
	if err != nil && err != io.EOF {
		err = s.opError("read", err)
	}
	return n, err
}

// write is Write of both kinds of connection.
func (s *sock) write(ctx context.Context, b []byte) (int, error) {
	if len(b) == 0 && s.stream && s.network != "unixpacket" {
		// Nothing to send on a byte stream. On a sequenced-packet
		// socket an empty write is an empty message, as package net
		// sends it (its reader sees 0 bytes: io.EOF).
		return s.noBytes("write")
	}
	// MSG_NOSIGNAL turns SIGPIPE into EPIPE; MSG_WAITALL makes io_uring
	// finish a stream send in one request where it can.
	flags := unix.MSG_NOSIGNAL
	if s.stream {
		flags |= unix.MSG_WAITALL
	}
	n, err := s.xfer(ctx, &s.wl, &s.wop, uring.OpSend, b, flags, s.stream)
	if err != nil {
		err = s.opError("write", err)
	}
	return n, err
}

// shutdown shuts down one or both directions through IORING_OP_SHUTDOWN.
func (s *sock) shutdown(ctx context.Context, how int) error {
	if !s.guard.incref() {
		return s.opError("close", net.ErrClosed)
	}
	defer s.guard.decref(ctx)
	op := fdOps.Get().(*fdOp)
	op.opcode, op.fd, op.flags = uring.OpShutdown, s.guard.fd, how
	res, serr := submit(ctx, s.guard.rt, op)
	fdOps.Put(op)
	if err := ioErr("shutdown", res, serr); err != nil {
		return s.opError("close", err)
	}
	return nil
}

// setsockopt sets an integer socket option; it does not wait, so it takes
// no context.
func (s *sock) setsockopt(level, name, value int) error {
	if !s.guard.incref() {
		return s.opError("set", net.ErrClosed)
	}
	err := unix.SetsockoptInt(s.guard.fd, level, name, value)
	s.guard.decrefNow()
	if err != nil {
		return s.opError("set", os.NewSyscallError("setsockopt", err))
	}
	return nil
}

func (s *sock) close(ctx context.Context) error {
	return closeErr(s.guard.close(ctx), s.network, s.laddr, s.raddr)
}

// Conn is a stream connection, TCP or Unix domain, whose I/O runs on the
// io_uring of the worker running the calling task. Each method that may
// wait takes a context first: the calling task is suspended meanwhile, and
// cancelling ctx (or its deadline passing) cancels the operation, which
// then returns an error wrapping ctx.Err() and leaves the connection
// usable; there are no deadlines besides ctx.
//
// A Conn is safe for concurrent use: reads take turns, and so do writes (a
// Write is never interleaved with another), while a read and a write run
// at the same time. The methods also work from plain goroutines, which wait
// in Go's netpoller as a net.Conn's would (see the package doc); tasks and
// goroutines may share a Conn. On TCP connections TCP_NODELAY is on, as in
// package net; TCP's own options (SetNoDelay, SetKeepAlivePeriod) fail on
// a Unix connection with an error matching syscall.EOPNOTSUPP.
//
// Conns come from Dial and Listener.Accept. The zero Conn, and a nil
// *Conn, is no connection: every method that returns an error fails at
// once with a *net.OpError wrapping os.ErrInvalid (Close and Set* too,
// whatever their arguments), LocalAddr and RemoteAddr return nil, and none
// touches any descriptor.
//
// A nil ctx is refused with a *net.OpError wrapping runtime.ErrNilContext,
// before anything is done (the same holds for Listener's and UDPConn's
// methods, and for Listen, Dial and the others that take a ctx).
type Conn struct {
	sock
	noZC atomic.Bool // the kernel refused zero-copy sends on this socket
	// Used under wl and rl, so vectored I/O allocates nothing once the
	// iovec arrays have grown.
	wvec, rvec vecOp
}

// newStreamConn makes a Conn of fd, a connected stream socket; laddr may
// be set later (Dial learns it once connected).
func newStreamConn(rt *runtime.Runtime, fd int, network string, laddr, raddr net.Addr) *Conn {
	c := &Conn{sock: sock{
		network: network,
		laddr:   laddr,
		raddr:   raddr,
		stream:  true,
	}}
	c.guard.init(rt, fd, true)
	if unixSotype(network) == 0 {
		// Latency over packet count, as net does; a failure only costs
		// speed.
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	return c
}

// ok reports whether c is a Conn that Dial or Accept made (open or closed
// since), not a zero value or nil.
func (c *Conn) ok() bool { return c != nil && c.guard.valid() }

// Read reads up to len(b) bytes with one recv: it returns what the kernel
// has (at least one byte), or 0 and io.EOF once the peer has closed its
// side, like net.Conn.Read. A Read in progress when Close is called
// returns net.ErrClosed promptly.
func (c *Conn) Read(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("read")
	}
	if ctx == nil {
		return 0, c.nilContext("read")
	}
	return c.read(ctx, b)
}

// Peek waits, as Read does, until the connection has bytes to read or the
// peer has closed its side, and copies up to len(b) of the waiting bytes
// into b without consuming them (recv with MSG_PEEK): the next Read
// returns them again. It returns 0 and io.EOF once the peer has closed its
// side and nothing is left to read, and an error matching
// syscall.ECONNRESET if the peer reset the connection. Peek takes its turn
// with the reads: a Read waits while a Peek waits.
//
// A server watches with it for a client that goes away while a request is
// being served, as net/http's background read does, without taking the
// client's next request from the connection.
func (c *Conn) Peek(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("read")
	}
	if ctx == nil {
		return 0, c.nilContext("read")
	}
	if len(b) == 0 {
		return c.noBytes("read")
	}
	n, err := c.xfer(ctx, &c.rl, &c.rop, uring.OpRecv, b, unix.MSG_PEEK, false)
	if err != nil && err != io.EOF {
		err = c.opError("read", err)
	}
	return n, err
}

// ReadFull reads exactly len(b) bytes, like io.ReadFull on the Conn: it
// returns io.EOF if the stream ended before any byte, io.ErrUnexpectedEOF
// if it ended part way, and otherwise n < len(b) only with an error. The
// kernel fills b with as few requests as it can (MSG_WAITALL).
func (c *Conn) ReadFull(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("read")
	}
	if ctx == nil {
		return 0, c.nilContext("read")
	}
	if len(b) == 0 {
		return c.noBytes("read")
	}
	n, err := c.xfer(ctx, &c.rl, &c.rop, uring.OpRecv, b, unix.MSG_WAITALL, true)
	switch {
	case err == io.EOF && n > 0:
		err = io.ErrUnexpectedEOF
	case err != nil && err != io.EOF:
		err = c.opError("read", err)
	}
	return n, err
}

// Write writes all of b, like net.Conn.Write: n < len(b) only with an
// error. Writes to a connection the peer reset fail with an error matching
// syscall.EPIPE or syscall.ECONNRESET, never with a signal.
func (c *Conn) Write(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("write")
	}
	if ctx == nil {
		return 0, c.nilContext("write")
	}
	return c.write(ctx, b)
}

// WriteZC writes all of b like Write, but a task on the io_uring backend
// sends it without copying it into the kernel (IORING_OP_SEND_ZC, Linux
// 6.0+): the network stack transmits from b's pages, and WriteZC returns
// once the kernel no longer references them, so b is the caller's again.
// For TCP that is when the peer has acknowledged the data (on loopback:
// when the peer has read it), a round trip later than Write would return,
// so WriteZC suits large writes (tens of KiB and up) to a real network
// device, with other tasks busy meanwhile, rather than request/response
// traffic; for small writes the kernel's bookkeeping costs more than the
// copy it saves. From a plain goroutine, on the portable backend, on a
// socket that does not support it (Unix domain sockets) or on a kernel
// without it, WriteZC writes as Write does.
//
// Cancelling ctx cancels the send while it waits for room in the socket,
// but once the data is out only the kernel's release ends the call (b
// cannot be handed back earlier without the risk of a retransmission
// sending whatever the caller wrote into it next), and a Close waits for
// it too. A peer that stops reading (on loopback) or acknowledging (TCP
// gives up after tcp_retries2, about 15 minutes) holds WriteZC that long:
// use it toward peers that keep reading, and Write elsewhere.
func (c *Conn) WriteZC(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("write")
	}
	if ctx == nil {
		return 0, c.nilContext("write")
	}
	if len(b) == 0 {
		return c.noBytes("write")
	}
	if c.noZC.Load() {
		return c.write(ctx, b)
	}
	n, err := c.xfer(ctx, &c.wl, &c.wop, uring.OpSendZC, b, unix.MSG_NOSIGNAL|unix.MSG_WAITALL, true)
	if n == 0 && (errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)) {
		// Not for this socket or kernel: plain sends from now on.
		c.noZC.Store(true)
		return c.write(ctx, b)
	}
	if err != nil {
		err = c.opError("write", err)
	}
	return n, err
}

// Writev writes all of bufs, in order, as Write would write their
// concatenation but without copying them together: one writev(2) per
// 1024 buffers (IOV_MAX), IORING_OP_WRITEV on the ring, repeated after a
// short write. It returns the bytes written, less than the total only with
// an error, and like Write it is never interleaved with another write.
// This is the batched path for a net.Buffers: (*net.Buffers).WriteTo on a
// NetConn writes buffer by buffer, since package net keeps its own
// batching interface unexported.
func (c *Conn) Writev(ctx context.Context, bufs [][]byte) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("writev")
	}
	if ctx == nil {
		return 0, c.nilContext("writev")
	}
	n, err := c.vecXfer(ctx, &c.wl, &c.wvec, uring.OpWritev, bufs, true)
	if err != nil {
		err = c.opError("writev", err)
	}
	return n, err
}

// Readv reads into bufs, filling each before the next, with one readv(2)
// (IORING_OP_READV on the ring; the first 1024 non-empty buffers): like
// Read it returns what the kernel has, at least one byte, or 0 and io.EOF
// once the peer has closed its side.
func (c *Conn) Readv(ctx context.Context, bufs [][]byte) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("readv")
	}
	if ctx == nil {
		return 0, c.nilContext("readv")
	}
	n, err := c.vecXfer(ctx, &c.rl, &c.rvec, uring.OpReadv, bufs, false)
	if err != nil && err != io.EOF {
		err = c.opError("readv", err)
	}
	return n, err
}

// vecXfer is xfer for readv and writev: it transfers into or out of bufs
// under l, until all of them when all is set, with the same results.
func (c *Conn) vecXfer(ctx context.Context, l *opLock, op *vecOp, opcode uring.Op, bufs [][]byte, all bool) (int, error) {
	total := 0
	for _, b := range bufs {
		total += len(b)
	}
	if total == 0 {
		if c.guard.closing() {
			return 0, net.ErrClosed // as for Read and Write of no bytes
		}
		return 0, nil
	}
	if err := l.lock(ctx); err != nil {
		return 0, err
	}
	defer l.unlock() // also on a panic: see sock.xfer
	if !c.guard.incref() {
		return 0, net.ErrClosed
	}
	defer c.guard.decref(ctx)
	n := 0
	var err error
	for n < total {
		// The file position of a socket means nothing: CurrentPos makes
		// the system calls readv and writev, and the ring's requests
		// are sent at the position 0 that sockets require.
		op.opcode, op.fd, op.off = opcode, c.guard.fd, uring.CurrentPos
		op.setBufs(bufs, n)
		res, serr := c.guard.submitPoll(ctx, op, opcode == uring.OpWritev)
		if err = ioErr(syscallName(opcode), res, serr); err != nil {
			break
		}
		if res.Res == 0 {
			err = io.EOF
			if opcode == uring.OpWritev {
				err = io.ErrShortWrite
			}
			break
		}
		n += int(res.Res)
		if !all {
			break
		}
	}
	op.clear()
	closing := c.guard.closing()
	if closing && (err != nil || n == 0) {
		return n, net.ErrClosed
	}
	return n, err
}

// CloseWrite shuts down the sending side (the peer reads io.EOF), like
// net.TCPConn.CloseWrite; reading goes on.
func (c *Conn) CloseWrite(ctx context.Context) error {
	if !c.ok() {
		return invalidSocket("close")
	}
	if ctx == nil {
		return c.nilContext("close")
	}
	return c.shutdown(ctx, unix.SHUT_WR)
}

// CloseRead shuts down the receiving side, like net.TCPConn.CloseRead.
func (c *Conn) CloseRead(ctx context.Context) error {
	if !c.ok() {
		return invalidSocket("close")
	}
	if ctx == nil {
		return c.nilContext("close")
	}
	return c.shutdown(ctx, unix.SHUT_RD)
}

// Close closes the connection, like net.Conn.Close. Reads and writes in
// progress in other tasks return net.ErrClosed promptly (Close shuts the
// socket down to wake them) and the descriptor is closed once none uses it,
// which Close waits for (or until ctx ends; the descriptor is then closed
// by the last operation to finish). Later calls, of no bytes too, fail
// with net.ErrClosed. A nil ctx is refused (runtime.ErrNilContext) and
// nothing happens: the connection stays open and usable, and a later Close
// with a context closes it.
func (c *Conn) Close(ctx context.Context) error {
	if !c.ok() {
		return invalidSocket("close")
	}
	if ctx == nil {
		return c.nilContext("close")
	}
	return c.close(ctx)
}

// LocalAddr returns the local address, a *net.TCPAddr or *net.UnixAddr
// (nil for a zero or nil Conn).
func (c *Conn) LocalAddr() net.Addr {
	if c == nil {
		return nil
	}
	return c.laddr
}

// RemoteAddr returns the peer's address, a *net.TCPAddr or *net.UnixAddr
// (nil for a zero or nil Conn).
func (c *Conn) RemoteAddr() net.Addr {
	if c == nil {
		return nil
	}
	return c.raddr
}

// SetNoDelay sets TCP_NODELAY: true (the default) sends small writes at
// once, false lets the kernel coalesce them (Nagle's algorithm).
func (c *Conn) SetNoDelay(noDelay bool) error {
	if !c.ok() {
		return invalidSocket("set")
	}
	return c.setsockopt(unix.IPPROTO_TCP, unix.TCP_NODELAY, boolInt(noDelay))
}

// SetLinger sets what Close does with unsent data, like
// net.TCPConn.SetLinger: sec < 0 (the default) sends it in the background,
// sec == 0 discards it and resets the connection, sec > 0 sends it in the
// background for up to sec seconds and then resets.
func (c *Conn) SetLinger(sec int) error {
	if !c.ok() {
		return invalidSocket("set")
	}
	if !c.guard.incref() {
		return c.opError("set", net.ErrClosed)
	}
	l := unix.Linger{Onoff: int32(boolInt(sec >= 0)), Linger: int32(max(sec, 0))}
	err := unix.SetsockoptLinger(c.guard.fd, unix.SOL_SOCKET, unix.SO_LINGER, &l)
	c.guard.decrefNow()
	if err != nil {
		return c.opError("set", os.NewSyscallError("setsockopt", err))
	}
	return nil
}

// defaultKeepAlivePeriod is SetKeepAlivePeriod(0)'s period, net's default
// idle time.
const defaultKeepAlivePeriod = 15 * time.Second

// SetKeepAlive turns TCP keep-alive probes on or off (off by default).
func (c *Conn) SetKeepAlive(keepalive bool) error {
	if !c.ok() {
		return invalidSocket("set")
	}
	return c.setsockopt(unix.SOL_SOCKET, unix.SO_KEEPALIVE, boolInt(keepalive))
}

// SetKeepAlivePeriod sets the idle time before the first keep-alive probe
// and the interval between probes to d, rounded up to whole seconds. As
// with net.TCPConn.SetKeepAlivePeriod, 0 means 15 s and a negative d
// leaves both as they are; unlike it (since Go 1.23, which sets only the
// idle time), the interval follows too. It does not turn keep-alive on.
func (c *Conn) SetKeepAlivePeriod(d time.Duration) error {
	if !c.ok() {
		return invalidSocket("set")
	}
	switch {
	case d < 0:
		return nil
	case d == 0:
		d = defaultKeepAlivePeriod
	}
	secs := max(int((d+time.Second-1)/time.Second), 1)
	if err := c.setsockopt(unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, secs); err != nil {
		return err
	}
	return c.setsockopt(unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, secs)
}
