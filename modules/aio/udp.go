package aio

import (
	"context"
	"github.com/faio-go/faio/modules/runtime"
	"net"
	"net/netip"
	"os"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// UDPConn is a UDP socket whose I/O runs on the io_uring of the worker
// running the calling task: unconnected (ListenUDP: ReadFrom and WriteTo
// any peer) or connected (DialUDP: Read and Write with one peer). Each
// method that may wait takes a context first, as Conn's do, and it is safe
// for concurrent use in the same way: receives take turns, sends take
// turns. A datagram longer than the buffer given to a read is truncated,
// the rest discarded, as with net.UDPConn.
//
// UDPConns come from ListenUDP and DialUDP. The zero UDPConn, and a nil
// *UDPConn, is no socket: every method that returns an error fails at once
// with a *net.OpError wrapping os.ErrInvalid (Close too), LocalAddr and
// RemoteAddr return nil, and none touches any descriptor.
type UDPConn struct {
	sock
	family     int
	rmsg, wmsg msgOp // used under rl and wl
}

// ListenUDP opens a UDP socket bound to address on the runtime of ctx
// (see OpenFile), like net.ListenPacket: network is "udp", "udp4" or "udp6", address
// as for Listen (port 0 picks a free port; see LocalAddr). It is
// ListenConfig{}.ListenUDP.
func ListenUDP(ctx context.Context, network, address string) (*UDPConn, error) {
	return ListenConfig{}.ListenUDP(ctx, network, address)
}

// ListenUDP is the package's ListenUDP with the options of lc: ReusePort
// lets several sockets bind the same address and port, and the kernel
// spreads the datagrams among them by a hash of the sender. Backlog does
// not apply to UDP.
func (lc ListenConfig) ListenUDP(ctx context.Context, network, address string) (*UDPConn, error) {
	rt, err := runtimeOf(ctx)
	if err != nil {
		return nil, netError("listen", network, nil, nil, err)
	}
	ipNet := ipNetwork(network, "udp")
	if ipNet == "" {
		return nil, netError("listen", network, nil, nil, net.UnknownNetworkError(network))
	}
	addrs, err := resolve(ctx, network, ipNet, address, true)
	if err != nil {
		return nil, netError("listen", network, nil, nil, err)
	}
	return firstUsable(ctx, addrs, func(ap netip.AddrPort) (*UDPConn, error) {
		return udpSocket(rt, lc, network, ap, netip.AddrPort{})
	})
}

// DialUDP opens a UDP socket connected to address on the runtime of ctx
// (see OpenFile), like net.Dial with "udp", "udp4" or "udp6": Read receives only from
// that peer and Write sends to it. Each resolved address is tried in turn.
func DialUDP(ctx context.Context, network, address string) (*UDPConn, error) {
	rt, err := runtimeOf(ctx)
	if err != nil {
		return nil, netError("dial", network, nil, nil, err)
	}
	ipNet := ipNetwork(network, "udp")
	if ipNet == "" {
		return nil, netError("dial", network, nil, nil, net.UnknownNetworkError(network))
	}
	addrs, err := resolve(ctx, network, ipNet, address, false)
	if err != nil {
		return nil, netError("dial", network, nil, nil, err)
	}
	return firstOf(ctx, addrs, func(ap netip.AddrPort) (*UDPConn, error) {
		return udpSocket(rt, ListenConfig{}, network, netip.AddrPort{}, ap)
	})
}

// udpSocket creates a UDP socket bound to local (when valid), with lc's
// options, or connected to remote (when valid).
func udpSocket(rt *runtime.Runtime, lc ListenConfig, network string, local, remote netip.AddrPort) (*UDPConn, error) {
	op, ap := "listen", local
	if remote.IsValid() {
		op, ap = "dial", remote
	}
	fail := func(err error) (*UDPConn, error) {
		return nil, netError(op, network, nil, net.UDPAddrFromAddrPort(ap), err)
	}
	fd, err := newSocket(ap, unix.SOCK_DGRAM, unix.IPPROTO_UDP, ipNetwork(network, "udp") == "ip6")
	if err != nil {
		return fail(err)
	}
	// As package net (setDefaultSockopts): a UDP socket may send to a
	// broadcast address.
	if serr := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BROADCAST, 1); serr != nil {
		err = os.NewSyscallError("setsockopt", serr)
	} else if local.IsValid() {
		if err = lc.setReusePort(fd); err == nil {
			err = bind(fd, local)
		}
	} else {
		cop := &sockaddrOp{opcode: uring.OpConnect, fd: fd}
		if cop.salen, err = uring.SockaddrFromAddrPort(remote, &cop.sa); err == nil {
			// A datagram socket connects at once: no need to wait.
			res := cop.direct()
			if cop.again {
				// No ephemeral port to bind (see sockaddrOp.again).
				res = runtime.Result{Res: -int32(unix.EAGAIN)}
			}
			err = ioErr("connect", res, nil)
		}
	}
	if err != nil {
		unix.Close(fd)
		return fail(err)
	}
	laddr, err := sockname(fd)
	if err != nil {
		unix.Close(fd)
		return fail(err)
	}
	c := &UDPConn{sock: sock{network: network, laddr: net.UDPAddrFromAddrPort(laddr)}}
	if remote.IsValid() {
		remote = peerOf(fd, remote) // an unspecified one: the host's loopback
		c.raddr = net.UDPAddrFromAddrPort(remote)
	}
	c.family = unix.AF_INET
	if !ap.Addr().Is4() {
		c.family = unix.AF_INET6
	}
	c.guard.init(rt, fd, true)
	return c, nil
}

// ok reports whether c is a UDPConn that ListenUDP or DialUDP made (open
// or closed since), not a zero value or nil.
func (c *UDPConn) ok() bool { return c != nil && c.guard.valid() }

// ReadFrom receives one datagram into b and returns its length (truncated
// to len(b)) and its sender, like net.UDPConn.ReadFromUDPAddrPort. On a
// dual-stack socket IPv4 senders appear as IPv4-mapped IPv6 addresses.
func (c *UDPConn) ReadFrom(ctx context.Context, b []byte) (int, netip.AddrPort, error) {
	if !c.ok() {
		return 0, netip.AddrPort{}, invalidSocket("read")
	}
	if ctx == nil {
		return 0, netip.AddrPort{}, c.nilContext("read")
	}
	n, from, err := c.msgXfer(ctx, &c.rl, &c.rmsg, uring.OpRecvmsg, b, netip.AddrPort{})
	if err != nil {
		return n, from, c.opError("read", err)
	}
	return n, from, nil
}

// WriteTo sends b as one datagram to addr, like
// net.UDPConn.WriteToUDPAddrPort. IPv4 addresses work on IPv6 sockets
// (dual-stack) and IPv4-mapped addresses on IPv4 ones. On a connected
// UDPConn it fails with net.ErrWriteToConnected.
func (c *UDPConn) WriteTo(ctx context.Context, b []byte, addr netip.AddrPort) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("write")
	}
	if ctx == nil {
		return 0, c.nilContext("write")
	}
	if c.raddr != nil {
		return 0, netError("write", c.network, c.laddr, net.UDPAddrFromAddrPort(addr), net.ErrWriteToConnected)
	}
	a := addr.Addr()
	if c.family == unix.AF_INET6 && a.Is4() {
		addr = netip.AddrPortFrom(netip.AddrFrom16(a.As16()), addr.Port())
	} else if c.family == unix.AF_INET && a.Is4In6() {
		addr = netip.AddrPortFrom(a.Unmap(), addr.Port())
	}
	n, _, err := c.msgXfer(ctx, &c.wl, &c.wmsg, uring.OpSendmsg, b, addr)
	if err != nil {
		return n, netError("write", c.network, c.laddr, net.UDPAddrFromAddrPort(addr), err)
	}
	return n, nil
}

// msgXfer runs one recvmsg (returning the sender) or sendmsg (to to) under
// l; errors are as for sock.xfer.
func (c *UDPConn) msgXfer(ctx context.Context, l *opLock, op *msgOp, opcode uring.Op, b []byte, to netip.AddrPort) (int, netip.AddrPort, error) {
	var from netip.AddrPort
	if err := l.lock(ctx); err != nil {
		return 0, from, err
	}
	defer l.unlock() // also on a panic: see sock.xfer
	if !c.guard.incref() {
		return 0, from, net.ErrClosed
	}
	defer c.guard.decref(ctx)
	op.opcode, op.fd, op.buf, op.flags = opcode, c.guard.fd, b, 0
	var err error
	if opcode == uring.OpSendmsg {
		op.flags = unix.MSG_NOSIGNAL
		op.salen, err = uring.SockaddrFromAddrPort(to, &op.sa)
	}
	var res runtime.Result
	if err == nil {
		var serr error
		res, serr = c.guard.submitPoll(ctx, op, opcode == uring.OpSendmsg)
		err = ioErr(syscallName(opcode), res, serr)
	}
	if err == nil && opcode == uring.OpRecvmsg {
		from, err = uring.AddrPortFromSockaddr(&op.sa, op.msg.Namelen)
	}
	op.clear()
	closing := c.guard.closing()
	if closing && (err != nil || res.Res == 0 && len(b) > 0) {
		return 0, netip.AddrPort{}, net.ErrClosed
	}
	if err != nil {
		return 0, from, err
	}
	return int(res.Res), from, nil
}

// Read receives one datagram from the connected peer into b (truncated to
// len(b)), like net.UDPConn.Read.
func (c *UDPConn) Read(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("read")
	}
	if ctx == nil {
		return 0, c.nilContext("read")
	}
	return c.read(ctx, b)
}

// Write sends b as one datagram to the connected peer, like
// net.UDPConn.Write.
func (c *UDPConn) Write(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, invalidSocket("write")
	}
	if ctx == nil {
		return 0, c.nilContext("write")
	}
	return c.write(ctx, b)
}

// Close closes the socket, like net.UDPConn.Close: operations in progress
// in other tasks return net.ErrClosed promptly, and the descriptor is
// closed once none uses it (see Conn.Close). Later calls, of no bytes too,
// fail with net.ErrClosed. A nil ctx is refused (runtime.ErrNilContext)
// and nothing happens: the socket stays open.
func (c *UDPConn) Close(ctx context.Context) error {
	if !c.ok() {
		return invalidSocket("close")
	}
	if ctx == nil {
		return c.nilContext("close")
	}
	return c.close(ctx)
}

// LocalAddr returns the local address, a *net.UDPAddr (nil for a zero or
// nil UDPConn).
func (c *UDPConn) LocalAddr() net.Addr {
	if c == nil {
		return nil
	}
	return c.laddr
}

// RemoteAddr returns the connected peer's address (a *net.UDPAddr), or nil
// for a socket made by ListenUDP (and for a zero or nil UDPConn).
func (c *UDPConn) RemoteAddr() net.Addr {
	if c == nil {
		return nil
	}
	return c.raddr
}
