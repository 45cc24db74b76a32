package aio

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// deadline is one direction's deadline of a net.Conn or net.Listener
// adapter, with the semantics package net documents: an operation waiting
// when the deadline passes fails with os.ErrDeadlineExceeded, one started
// after it fails at once, moving the deadline affects the operations
// already waiting, and the zero time clears it.
//
// Every operation of the direction runs with the deadline's current
// context; the deadline passing cancels that context with the cause
// os.ErrDeadlineExceeded, which cancels the operations in the kernel (and
// only returns once the kernel let go of their buffers, as any cancelled
// faio operation). A new deadline after an expiry starts a fresh context.
// Once the adapter is closed nothing arms a timer any more.
type deadline struct {
	cur    atomic.Pointer[deadlineCtx] // read by every operation
	mu     sync.Mutex                  // orders set, stop and the timer
	timer  *time.Timer
	seq    uint64 // bumped by every set: a timer of an older set does nothing
	closed bool   // stop was called, or set found the descriptor closing
}

// deadlineCtx is one generation of a direction's context: it lives until
// the deadline passes, and a set after that starts the next.
type deadlineCtx struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newDeadlineCtx() *deadlineCtx {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &deadlineCtx{ctx, cancel}
}

// context returns the context an operation starting now runs with: one
// atomic load once the direction has one.
func (d *deadline) context() context.Context {
	if c := d.cur.Load(); c != nil {
		return c.ctx
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cur.Load() == nil {
		d.cur.Store(newDeadlineCtx())
	}
	return d.cur.Load().ctx
}

// set moves the deadline to t (zero: none). Once the adapter's Close has
// stopped d, or g (the guard of the descriptor the deadline bounds) is
// closing, it arms nothing and returns false, and the caller reports
// net.ErrClosed as package net does. Close stops d under d.mu before it
// closes the descriptor, so a set racing it either comes first, and its
// timer is stopped, or finds d stopped.
func (d *deadline) set(t time.Time, g *fdGuard) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.closed || g.closing() {
		// Closed under the adapter (Conn.Close): no timer from now on.
		d.closed = true
		return false
	}
	c := d.cur.Load()
	if c == nil || c.ctx.Err() != nil {
		// Past an expiry the operations that saw it have ended; later
		// ones get a context of their own.
		c = newDeadlineCtx()
		d.cur.Store(c)
	}
	if t.IsZero() {
		return true
	}
	wait := time.Until(t)
	if wait <= 0 {
		c.cancel(os.ErrDeadlineExceeded)
		return true
	}
	seq := d.seq
	d.timer = time.AfterFunc(wait, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.seq == seq {
			c.cancel(os.ErrDeadlineExceeded)
		}
	})
	return true
}

// stop releases the timer for good (Close): later sets arm nothing.
func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	d.seq++
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

// expired returns the error of an operation that ran with ctx, a
// direction's deadline context: a deadline error if the deadline ended the
// operation, otherwise err as it is. Package net reports what the system
// call returned (io.EOF, net.ErrClosed, ECONNRESET ...) and a deadline
// error only for an operation the deadline ended, so the deadline having
// passed by now is not enough: err must be (or wrap) ctx's own error,
// which only the deadline causes. The deadline error is package net's: a
// *net.OpError (err's fields, or op, network, source and addr when err is
// none) whose Err is os.ErrDeadlineExceeded, Timeout() true.
func expired(ctx context.Context, err error, op, network string, source, addr net.Addr) error {
	if err == nil {
		return nil
	}
	return deadlineErr(ctx, err, op, network, source, addr)
}

// deadlineErr is expired for a failed operation, out of line so that
// expired stays small enough to inline.
func deadlineErr(ctx context.Context, err error, op, network string, source, addr net.Addr) error {
	cerr := ctx.Err()
	if cerr == nil || !errors.Is(err, cerr) || !errors.Is(context.Cause(ctx), os.ErrDeadlineExceeded) {
		return err
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		c := *oe
		c.Err = os.ErrDeadlineExceeded
		return &c
	}
	return &net.OpError{Op: op, Net: network, Source: source, Addr: addr, Err: os.ErrDeadlineExceeded}
}

// NetConn is a Conn as a net.Conn, for code written against the standard
// interfaces: bufio, io.Copy, crypto/tls, net/http. Its methods take no
// context; deadlines (SetDeadline and friends) bound them instead, exactly
// as package net documents. Called from a task, an operation suspends the
// task; called from a plain goroutine, it waits in Go's netpoller like a
// net.Conn. It is safe for concurrent use.
//
// Code layered on a NetConn may lock plain Go mutexes (crypto/tls does,
// around its handshake and each direction). A task that waits on such a
// mutex blocks its worker, and until it returns the completions of that
// worker's ring wait too: if the holder of the mutex waits for one of them,
// nothing moves. Give such a connection to one task, or let the first task
// finish the handshake (tls.Conn.HandshakeContext) before other tasks or
// goroutines share it.
//
// NetConn is an io.ReaderFrom, so io.Copy(netConn, file.IO()) sends the
// file with Conn.SendFile (see ReadFrom), and an io.WriterTo, so
// io.Copy(file.IO(), netConn) splices the connection's bytes into the file
// (see WriteTo), as package net and os do for a *net.TCPConn. It cannot join package net's
// batched writes, whose interface is unexported: (*net.Buffers).WriteTo
// calls Write once per buffer; NetConn.Writev writes them with one writev.
//
// A NetConn of a zero or nil Conn, the zero NetConn and a nil *NetConn fail
// every method that returns an error at once, as a zero Conn does: with a
// *net.OpError wrapping os.ErrInvalid (Close and the Set*Deadline methods
// too; no timer is armed). LocalAddr and RemoteAddr return nil.
type NetConn struct {
	c      *Conn
	rd, wd deadline
}

var _ net.Conn = (*NetConn)(nil)

// NetConn returns c as a net.Conn. Each call returns a new adapter with
// deadlines of its own: keep the one you set deadlines on.
func (c *Conn) NetConn() *NetConn { return &NetConn{c: c} }

// Conn returns the underlying Conn (nil for a zero or nil NetConn).
func (n *NetConn) Conn() *Conn {
	if n == nil {
		return nil
	}
	return n.c
}

// ok reports whether n is the adapter of a Conn that Dial or Accept made.
func (n *NetConn) ok() bool { return n != nil && n.c.ok() }

// Read reads like net.Conn.Read: io.EOF once the peer closed its side.
func (n *NetConn) Read(b []byte) (int, error) {
	if !n.ok() {
		return 0, invalidSocket("read")
	}
	ctx := n.rd.context()
	r, err := n.c.Read(ctx, b)
	return r, expired(ctx, err, "read", n.c.network, n.c.laddr, n.c.raddr)
}

// Write writes all of b, like net.Conn.Write.
func (n *NetConn) Write(b []byte) (int, error) {
	if !n.ok() {
		return 0, invalidSocket("write")
	}
	ctx := n.wd.context()
	w, err := n.c.Write(ctx, b)
	if len(b) == 0 && err == nil {
		// The Conn writes no bytes without looking at ctx; package net
		// checks the deadline first (after Close, which stays
		// net.ErrClosed), so that Write(nil) tells whether it passed.
		err = ctx.Err()
	}
	return w, expired(ctx, err, "write", n.c.network, n.c.laddr, n.c.raddr)
}

// Writev writes all of bufs, in order, with as few vectored sends as the
// kernel allows (Conn.Writev), under the write deadline: what
// (*net.Buffers).WriteTo does for a *net.TCPConn, which it cannot do for a
// NetConn, since package net keeps that interface unexported. A server that
// holds a response's header and body in separate buffers sends them in one
// system call (or one ring entry) instead of two.
func (n *NetConn) Writev(bufs [][]byte) (int, error) {
	if !n.ok() {
		return 0, invalidSocket("writev")
	}
	ctx := n.wd.context()
	w, err := n.c.Writev(ctx, bufs)
	if err == nil && w == 0 && buffersLen(bufs) == 0 {
		// As Write of no bytes: (*net.Buffers).WriteTo checks the
		// deadline first too.
		err = ctx.Err()
	}
	return w, expired(ctx, err, "writev", n.c.network, n.c.laddr, n.c.raddr)
}

// buffersLen is the byte count of bufs.
func buffersLen(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n
}

// Close closes the connection; operations in flight fail with
// net.ErrClosed.
func (n *NetConn) Close() error {
	if !n.ok() {
		return invalidSocket("close")
	}
	n.rd.stop()
	n.wd.stop()
	return n.c.Close(context.Background())
}

// CloseWrite shuts down the sending side, like net.TCPConn.CloseWrite.
func (n *NetConn) CloseWrite() error { return n.Conn().CloseWrite(context.Background()) }

// CloseRead shuts down the receiving side, like net.TCPConn.CloseRead.
func (n *NetConn) CloseRead() error { return n.Conn().CloseRead(context.Background()) }

// LocalAddr returns the local address.
func (n *NetConn) LocalAddr() net.Addr { return n.Conn().LocalAddr() }

// RemoteAddr returns the peer's address.
func (n *NetConn) RemoteAddr() net.Addr { return n.Conn().RemoteAddr() }

// SetDeadline sets the read and write deadlines. After Close it fails
// with an error matching net.ErrClosed, as net.Conn's does.
func (n *NetConn) SetDeadline(t time.Time) error {
	if !n.ok() {
		return invalidSocket("set")
	}
	if !n.rd.set(t, &n.c.guard) || !n.wd.set(t, &n.c.guard) {
		return setClosed(&n.c.sock)
	}
	return nil
}

// SetReadDeadline sets the deadline of Read, including Reads already
// waiting; the zero time clears it.
func (n *NetConn) SetReadDeadline(t time.Time) error {
	if !n.ok() {
		return invalidSocket("set")
	}
	if !n.rd.set(t, &n.c.guard) {
		return setClosed(&n.c.sock)
	}
	return nil
}

// SetWriteDeadline sets the deadline of Write, including Writes already
// waiting; the zero time clears it.
func (n *NetConn) SetWriteDeadline(t time.Time) error {
	if !n.ok() {
		return invalidSocket("set")
	}
	if !n.wd.set(t, &n.c.guard) {
		return setClosed(&n.c.sock)
	}
	return nil
}

// setClosed is the error of setting a deadline of a closed connection, as
// package net gives it (net.conn's SetDeadline): a *net.OpError "set"
// naming the local address and wrapping net.ErrClosed.
func setClosed(s *sock) error {
	return &net.OpError{Op: "set", Net: s.network, Source: nil, Addr: s.laddr, Err: net.ErrClosed}
}

// NetListener is a Listener as a net.Listener: Accept returns *NetConn
// values, so http.Serve and gRPC servers can run on faio connections.
//
// A NetListener of a zero or nil Listener, the zero NetListener and a nil
// *NetListener fail Accept and Close at once, as a zero Listener does,
// with a *net.OpError wrapping os.ErrInvalid; SetDeadline returns
// os.ErrInvalid itself (as net.TCPListener's returns its errors bare) and
// Addr returns nil.
type NetListener struct {
	l  *Listener
	ad deadline
}

var _ net.Listener = (*NetListener)(nil)

// NetListener returns l as a net.Listener.
func (l *Listener) NetListener() *NetListener { return &NetListener{l: l} }

// Accept waits for the next connection, like net.Listener.Accept; after
// Close it fails with an error matching net.ErrClosed.
func (n *NetListener) Accept() (net.Conn, error) {
	if !n.ok() {
		return nil, invalidSocket("accept")
	}
	ctx := n.ad.context()
	c, err := n.l.Accept(ctx)
	if err != nil {
		return nil, expired(ctx, err, "accept", n.l.network, nil, n.l.addr)
	}
	return c.NetConn(), nil
}

// SetDeadline bounds Accept, like net.TCPListener.SetDeadline; after
// Close it fails with net.ErrClosed itself, as net.TCPListener's and
// net.UnixListener's do.
func (n *NetListener) SetDeadline(t time.Time) error {
	if !n.ok() {
		return os.ErrInvalid
	}
	if !n.ad.set(t, &n.l.guard) {
		return net.ErrClosed
	}
	return nil
}

// Close stops listening; an Accept in progress fails.
func (n *NetListener) Close() error {
	if !n.ok() {
		return invalidSocket("close")
	}
	n.ad.stop()
	return n.l.Close(context.Background())
}

// ok reports whether n is the adapter of a Listener that Listen made.
func (n *NetListener) ok() bool { return n != nil && n.l.ok() }

// Addr returns the listening address.
func (n *NetListener) Addr() net.Addr {
	if n == nil {
		return nil
	}
	return n.l.Addr()
}

// NetPacketConn is a UDPConn as a net.PacketConn, with package net's
// deadline rules (see NetConn).
//
// A NetPacketConn of a zero or nil UDPConn, the zero NetPacketConn and a
// nil *NetPacketConn fail every method that returns an error at once, as a
// zero UDPConn does, with a *net.OpError wrapping os.ErrInvalid; LocalAddr
// returns nil.
type NetPacketConn struct {
	c      *UDPConn
	rd, wd deadline
}

var _ net.PacketConn = (*NetPacketConn)(nil)

// NetPacketConn returns c as a net.PacketConn.
func (c *UDPConn) NetPacketConn() *NetPacketConn { return &NetPacketConn{c: c} }

// ok reports whether n is the adapter of a UDPConn that ListenUDP or
// DialUDP made.
func (n *NetPacketConn) ok() bool { return n != nil && n.c.ok() }

// ReadFrom reads one datagram and returns its sender as a *net.UDPAddr.
func (n *NetPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	if !n.ok() {
		return 0, nil, invalidSocket("read")
	}
	ctx := n.rd.context()
	r, from, err := n.c.ReadFrom(ctx, b)
	if err != nil {
		return r, nil, expired(ctx, err, "read", n.c.network, n.c.laddr, n.c.raddr)
	}
	return r, net.UDPAddrFromAddrPort(from), nil
}

// WriteTo sends b as one datagram to addr, a *net.UDPAddr (or any net.Addr
// whose String is an ip:port). A *net.UDPAddr without an IP (as
// net.ResolveUDPAddr returns for ":port") means this host, as for
// net.UDPConn: the datagram goes to the unspecified address of the
// socket's family, which the kernel delivers locally.
func (n *NetPacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if !n.ok() {
		return 0, invalidSocket("write")
	}
	var to netip.AddrPort
	switch a := addr.(type) {
	case *net.UDPAddr:
		switch {
		case a != nil && (a.Port < 0 || a.Port > 0xffff):
			// As package net: the port would wrap to another one.
			return 0, &net.OpError{Op: "write", Net: n.c.network, Source: n.c.LocalAddr(), Addr: addr, Err: syscall.EINVAL}
		case a == nil:
			return 0, &net.OpError{Op: "write", Net: n.c.network, Source: n.c.LocalAddr(), Err: errMissingAddress}
		case len(a.IP) == 0:
			unspecified := netip.IPv4Unspecified()
			if n.c.family == unix.AF_INET6 {
				unspecified = netip.IPv6Unspecified()
			}
			to = netip.AddrPortFrom(unspecified, uint16(a.Port))
		default:
			to = a.AddrPort()
		}
	case nil:
		return 0, &net.OpError{Op: "write", Net: n.c.network, Source: n.c.LocalAddr(), Err: errMissingAddress}
	default:
		ap, err := netip.ParseAddrPort(addr.String())
		if err != nil {
			return 0, &net.OpError{Op: "write", Net: n.c.network, Source: n.c.LocalAddr(), Addr: addr, Err: err}
		}
		to = ap
	}
	ctx := n.wd.context()
	w, err := n.c.WriteTo(ctx, b, to)
	return w, expired(ctx, err, "write", n.c.network, n.c.laddr, addr)
}

var errMissingAddress = errors.New("missing address")

// Close closes the socket; operations in flight fail with net.ErrClosed.
func (n *NetPacketConn) Close() error {
	if !n.ok() {
		return invalidSocket("close")
	}
	n.rd.stop()
	n.wd.stop()
	return n.c.Close(context.Background())
}

// LocalAddr returns the local address.
func (n *NetPacketConn) LocalAddr() net.Addr {
	if n == nil {
		return nil
	}
	return n.c.LocalAddr()
}

// SetDeadline sets the read and write deadlines. After Close it fails
// with an error matching net.ErrClosed, as net.UDPConn's does.
func (n *NetPacketConn) SetDeadline(t time.Time) error {
	if !n.ok() {
		return invalidSocket("set")
	}
	if !n.rd.set(t, &n.c.guard) || !n.wd.set(t, &n.c.guard) {
		return setClosed(&n.c.sock)
	}
	return nil
}

// SetReadDeadline sets the deadline of ReadFrom, including calls already
// waiting.
func (n *NetPacketConn) SetReadDeadline(t time.Time) error {
	if !n.ok() {
		return invalidSocket("set")
	}
	if !n.rd.set(t, &n.c.guard) {
		return setClosed(&n.c.sock)
	}
	return nil
}

// SetWriteDeadline sets the deadline of WriteTo.
func (n *NetPacketConn) SetWriteDeadline(t time.Time) error {
	if !n.ok() {
		return invalidSocket("set")
	}
	if !n.wd.set(t, &n.c.guard) {
		return setClosed(&n.c.sock)
	}
	return nil
}
