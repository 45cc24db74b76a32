package aio

import (
	"context"
	"errors"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// Sockets are created blocking: io_uring tries each operation without
// blocking first and otherwise waits on the socket with its internal poll,
// for blocking and non-blocking sockets alike. A socket becomes
// non-blocking the first time an operation waits for it in Go's netpoller
// (a plain goroutine's, or a task's on the portable backend; see
// direct.go), and stays so.

// ipNetwork is the resolver network ("ip", "ip4", "ip6") for a socket
// network name ("tcp", "udp4", ...), or "" for an unknown one.
func ipNetwork(network, base string) string {
	switch network {
	case base:
		return "ip"
	case base + "4":
		return "ip4"
	case base + "6":
		return "ip6"
	}
	return ""
}

// resolve returns the socket addresses address stands for on ipNet, in the
// order to try them. Literal addresses and numeric ports are parsed here;
// host names and service names go to net.DefaultResolver on a goroutine
// (see offload). An empty or missing host means the unspecified address
// when listening and the loopback address when dialling, as in package net.
// So does, when listening on "tcp" or "udp", a literal unspecified address,
// 0.0.0.0 included: package net listens dual-stack there too (faio listened
// on IPv4 alone, found by a reviewer). An empty address is ":0" when
// listening, as in package net.
func resolve(ctx context.Context, network, ipNet, address string, listen bool) ([]netip.AddrPort, error) {
	if listen && address == "" {
		address = ":0"
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := resolvePort(ctx, network, portStr)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	named := false
	switch {
	case host == "":
		addrs = defaultAddrs(ipNet, listen)
	default:
		if a, perr := netip.ParseAddr(host); perr == nil {
			addrs = []netip.Addr{a}
			if listen && ipNet == "ip" && a.IsUnspecified() {
				addrs = defaultAddrs(ipNet, listen)
			}
			break
		}
		named = true
		var lerr error
		err := offload(ctx, func() { addrs, lerr = net.DefaultResolver.LookupNetIP(ctx, ipNet, host) })
		if err == nil {
			err = lerr
		}
		if err != nil {
			return nil, err
		}
	}
	var out []netip.AddrPort
	for _, a := range addrs {
		if a.Is4In6() {
			a = a.Unmap()
		}
		if (ipNet == "ip4" && !a.Is4()) || (ipNet == "ip6" && !a.Is6()) {
			continue
		}
		out = append(out, netip.AddrPortFrom(a, port))
	}
	if len(out) == 0 {
		return nil, &net.AddrError{Err: "no suitable address found", Addr: host}
	}
	if listen && named {
		// One address, as package net binds: the first IPv4 one if
		// there is one (for "localhost", 127.0.0.1 where the resolver
		// puts ::1 first), else the first.
		for _, ap := range out {
			if ap.Addr().Is4() {
				return []netip.AddrPort{ap}, nil
			}
		}
		return out[:1], nil
	}
	return out, nil
}

func resolvePort(ctx context.Context, network, port string) (uint16, error) {
	if port == "" {
		return 0, nil
	}
	if p, err := strconv.ParseUint(port, 10, 16); err == nil {
		return uint16(p), nil
	}
	var p int
	var lerr error
	if err := offload(ctx, func() { p, lerr = net.DefaultResolver.LookupPort(ctx, network, port) }); err != nil {
		return 0, err
	}
	return uint16(p), lerr
}

// defaultAddrs stands in for an empty host. Listening on "tcp" prefers the
// dual-stack IPv6 wildcard and falls back to IPv4 where IPv6 is missing.
func defaultAddrs(ipNet string, listen bool) []netip.Addr {
	v4, v6 := netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()
	if listen {
		v4, v6 = netip.IPv4Unspecified(), netip.IPv6Unspecified()
	}
	switch ipNet {
	case "ip4":
		return []netip.Addr{v4}
	case "ip6":
		return []netip.Addr{v6}
	}
	if listen {
		return []netip.Addr{v6, v4}
	}
	return []netip.Addr{v4, v6}
}

// offload runs fn, a call that blocks its thread (name resolution), on a new
// goroutine and waits for it with Suspend, so a task does not hold its
// worker meanwhile. If ctx ends first offload returns ctx.Err() at once and
// fn's results must not be read; fn should honour ctx so that its goroutine
// ends soon too.
func offload(ctx context.Context, fn func()) error {
	var (
		mu     sync.Mutex
		done   bool
		waiter runtime.Waker
	)
	go func() {
		fn()
		mu.Lock()
		done = true
		w := waiter
		mu.Unlock()
		w.Wake()
	}()
	return runtime.Suspend(ctx, func(w runtime.Waker) bool {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return false
		}
		waiter = w
		return true
	})
}

// newSocket creates a close-on-exec socket for ap's family. v6only applies
// to IPv6 sockets: false makes a wildcard IPv6 socket dual-stack.
func newSocket(ap netip.AddrPort, sotype, proto int, v6only bool) (int, error) {
	family := unix.AF_INET
	if !ap.Addr().Is4() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, sotype|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, boolInt(v6only)); err != nil {
			unix.Close(fd)
			return -1, os.NewSyscallError("setsockopt", err)
		}
	}
	return fd, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bind binds fd to ap. It goes through the raw system call so that IPv6
// zones are resolved by uring.SockaddrFromAddrPort like everywhere else.
func bind(fd int, ap netip.AddrPort) error {
	var sa uring.RawSockaddrAny
	n, err := uring.SockaddrFromAddrPort(ap, &sa)
	if err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(n)); errno != 0 {
		return os.NewSyscallError("bind", errno)
	}
	return nil
}

// sockname returns the local address of fd (getsockname(2)).
func sockname(fd int) (netip.AddrPort, error) { return sockaddrOf(fd, unix.SYS_GETSOCKNAME) }

// sockaddrOf asks the kernel for fd's own address (sysno
// SYS_GETSOCKNAME) or its peer's (SYS_GETPEERNAME).
func sockaddrOf(fd int, sysno uintptr) (netip.AddrPort, error) {
	var sa uring.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	if _, _, errno := unix.Syscall(sysno, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&n))); errno != 0 {
		name := "getsockname"
		if sysno == unix.SYS_GETPEERNAME {
			name = "getpeername"
		}
		return netip.AddrPort{}, os.NewSyscallError(name, errno)
	}
	return uring.AddrPortFromSockaddr(&sa, n)
}

// peerOf returns ap, or, when ap's address is unspecified (0.0.0.0, ::),
// the peer fd is connected to: the kernel connects those to this host's
// loopback, and package net reports the address it connected.
func peerOf(fd int, ap netip.AddrPort) netip.AddrPort {
	if !ap.Addr().IsUnspecified() {
		return ap // as given, zone and all
	}
	if peer, err := sockaddrOf(fd, unix.SYS_GETPEERNAME); err == nil {
		return peer
	}
	return ap
}

// Listener is a listening stream socket, TCP or Unix domain. Accept runs
// on the io_uring of the calling task's worker. A Listener is safe for
// concurrent use; several tasks may Accept at once.
//
// Listeners come from Listen and ListenConfig.Listen. The zero Listener,
// and a nil *Listener, is no socket: Accept and Close fail at once with a
// *net.OpError wrapping os.ErrInvalid, Addr returns nil, and none touches
// any descriptor.
type Listener struct {
	guard   fdGuard
	network string
	addr    net.Addr
	// al makes Accepts take turns, as net.Listener's do: those that wait
	// in the netpoller (plain goroutines', portable tasks') share the
	// File's read deadline.
	al opLock
	// path is the file a Unix socket was bound to ("" for TCP and
	// abstract addresses): the first Close removes it while unlink is
	// set, as net.UnixListener does.
	path       string
	unlink     atomic.Bool
	unlinkOnce sync.Once
}

var acceptOps = sync.Pool{New: func() any { return new(sockaddrOp) }}

// ListenConfig holds the options of a listening socket. Its zero value
// is what Listen uses.
type ListenConfig struct {
	// ReusePort sets SO_REUSEPORT before binding, so that several sockets
	// (of this process or of others run by the same user) may listen on
	// one address and port, each of them setting it: the kernel spreads
	// incoming connections (for UDP, datagrams) among them by a hash of
	// the peer's address. TCP and UDP only: on a Unix socket Listen fails
	// with an error matching syscall.EOPNOTSUPP.
	ReusePort bool
	// Backlog is the length of the queue of connections the kernel has
	// established and Accept has not taken yet (listen(2)'s backlog). 0
	// means the system's maximum (net.core.somaxconn), as in package net;
	// a negative value is an error.
	Backlog int
}

// errNegativeBacklog is the error of a ListenConfig with a negative Backlog.
var errNegativeBacklog = errors.New("negative ListenConfig.Backlog")

func (lc ListenConfig) backlog() int {
	if lc.Backlog == 0 {
		return unix.SOMAXCONN // the kernel caps it at net.core.somaxconn
	}
	// listen(2) takes an int: larger values would wrap to almost
	// nothing. The kernel caps it at net.core.somaxconn anyway.
	return min(lc.Backlog, math.MaxInt32)
}

// Listen announces on the local address, like net.Listen, on the runtime of
// ctx (see OpenFile). It is ListenConfig{}.Listen: see there.
func Listen(ctx context.Context, network, address string) (*Listener, error) {
	return ListenConfig{}.Listen(ctx, network, address)
}

// Listen announces on the local address, like net.ListenConfig.Listen, on
// the runtime of ctx (see OpenFile), with the options of lc.
//
// For network "tcp", "tcp4" or "tcp6", address is host:port with a
// literal IP, a host name (resolved with net.DefaultResolver; one address
// is bound, as by package net: the first IPv4 one for "tcp" if there is
// one, else the first) or an empty or unspecified host (every local
// address: "", "0.0.0.0" and "::" listen dual-stack for "tcp", as in
// package net); port 0 picks a free port (see Addr), and so does an empty
// address. SO_REUSEADDR is set. ctx bounds the name resolution.
//
// For network "unix" (SOCK_STREAM) or "unixpacket" (SOCK_SEQPACKET: each
// Write is one message, each Read returns at most one), address is a file
// system path, which must not exist yet (EADDRINUSE otherwise), an
// abstract name written "@name" (Linux; no file), or "" for an abstract
// name the kernel picks. Addr returns a *net.UnixAddr, and Close removes
// the socket file (see SetUnlinkOnClose), as net.UnixListener does.
func (lc ListenConfig) Listen(ctx context.Context, network, address string) (*Listener, error) {
	rt, err := runtimeOf(ctx)
	if err != nil {
		return nil, netError("listen", network, nil, nil, err)
	}
	if lc.Backlog < 0 {
		return nil, netError("listen", network, nil, nil, errNegativeBacklog)
	}
	if sotype := unixSotype(network); sotype != 0 {
		return lc.listenUnix(rt, network, sotype, address)
	}
	ipNet := ipNetwork(network, "tcp")
	if ipNet == "" {
		return nil, netError("listen", network, nil, nil, net.UnknownNetworkError(network))
	}
	addrs, err := resolve(ctx, network, ipNet, address, true)
	if err != nil {
		return nil, netError("listen", network, nil, nil, err)
	}
	return firstUsable(ctx, addrs, func(ap netip.AddrPort) (*Listener, error) {
		return lc.listenTCP(rt, network, ap)
	})
}

// firstOf tries each resolved address in turn and returns the first
// success, or else the first error (the one about the preferred address);
// it stops early once ctx is done.
func firstOf[T any](ctx context.Context, addrs []netip.AddrPort, try func(netip.AddrPort) (T, error)) (T, error) {
	return firstOfUntil(ctx, addrs, try, func(error) bool { return false })
}

// firstUsable is firstOf for a listen: it goes on to the next address only
// when an address cannot be bound on this machine (no IPv6, an address
// that is not local), and otherwise returns the error, as net.Listen,
// which binds one address, would. The dual-stack [::] that "tcp" and
// "udp" listen on for an unspecified host fell back to 0.0.0.0 on any
// error: beside a "tcp6" listener on [::]:p, where net.Listen fails with
// EADDRINUSE, faio listened on IPv4 alone (found by a reviewer).
func firstUsable[T any](ctx context.Context, addrs []netip.AddrPort, try func(netip.AddrPort) (T, error)) (T, error) {
	return firstOfUntil(ctx, addrs, try, func(err error) bool {
		// (EPERM and EACCES: a sandbox that refuses IPv6 sockets,
		// where net's probe finds no IPv6 and listens on IPv4.)
		return !errors.Is(err, syscall.EAFNOSUPPORT) && !errors.Is(err, syscall.EADDRNOTAVAIL) &&
			!errors.Is(err, syscall.EPROTONOSUPPORT) && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES)
	})
}

func firstOfUntil[T any](ctx context.Context, addrs []netip.AddrPort, try func(netip.AddrPort) (T, error), stop func(error) bool) (T, error) {
	var first error
	for _, ap := range addrs {
		v, err := try(ap)
		if err == nil {
			return v, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil || stop(err) {
			break
		}
	}
	var zero T
	return zero, first
}

func (lc ListenConfig) listenTCP(rt *runtime.Runtime, network string, ap netip.AddrPort) (*Listener, error) {
	fail := func(err error) (*Listener, error) {
		return nil, netError("listen", network, nil, net.TCPAddrFromAddrPort(ap), err)
	}
	fd, err := newSocket(ap, unix.SOCK_STREAM, unix.IPPROTO_TCP, ipNetwork(network, "tcp") == "ip6")
	if err != nil {
		return fail(err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return fail(os.NewSyscallError("setsockopt", err))
	}
	if err := lc.setReusePort(fd); err != nil {
		unix.Close(fd)
		return fail(err)
	}
	if err := bind(fd, ap); err != nil {
		unix.Close(fd)
		return fail(err)
	}
	if err := unix.Listen(fd, lc.backlog()); err != nil {
		unix.Close(fd)
		return fail(os.NewSyscallError("listen", err))
	}
	local, err := sockname(fd)
	if err != nil {
		unix.Close(fd)
		return fail(err)
	}
	l := &Listener{network: network, addr: net.TCPAddrFromAddrPort(local)}
	l.guard.init(rt, fd, true)
	return l, nil
}

// setReusePort sets SO_REUSEPORT on fd if lc asks for it.
func (lc ListenConfig) setReusePort(fd int) error {
	if !lc.ReusePort {
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	return nil
}

// Addr returns the address the listener is bound to: a *net.TCPAddr, with
// the port the kernel picked for port 0, or a *net.UnixAddr (nil for a
// zero or nil Listener).
func (l *Listener) Addr() net.Addr {
	if l == nil {
		return nil
	}
	return l.addr
}

// ok reports whether l is a Listener that Listen made (open or closed
// since), not a zero value or nil.
func (l *Listener) ok() bool { return l != nil && l.guard.valid() }

// Accept waits for the next connection and returns it, like
// net.Listener.Accept. Cancelling ctx cancels the wait (the error wraps
// ctx.Err()); after Close, Accept fails with net.ErrClosed, and so does an
// Accept in progress when Close is called.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	if !l.ok() {
		return nil, invalidSocket("accept")
	}
	if ctx == nil {
		return nil, netError("accept", l.network, nil, l.addr, runtime.ErrNilContext)
	}
	// Accepts take turns, as net.Listener's do: those that wait in the
	// netpoller share the File's read deadline.
	if err := l.al.lock(ctx); err != nil {
		return nil, netError("accept", l.network, nil, l.addr, err)
	}
	defer l.al.unlock()
	if !l.guard.incref() {
		return nil, netError("accept", l.network, nil, l.addr, net.ErrClosed)
	}
	defer l.guard.decref(ctx) // also on a panic (in a ctx's method)
	op := acceptOps.Get().(*sockaddrOp)
	var (
		res  runtime.Result
		serr error
	)
	for {
		op.opcode, op.fd = uring.OpAccept, l.guard.fd
		res, serr = l.guard.submitPoll(ctx, op, false)
		// A connection reset while queued is no reason to fail Accept.
		if serr != nil || res.Err() != unix.ECONNABORTED {
			break
		}
	}
	var raddr net.Addr
	var aerr error
	if serr == nil && res.Res >= 0 {
		raddr, aerr = l.peerAddr(&op.sa, op.salen)
	}
	acceptOps.Put(op)
	closing := l.guard.closing()
	err := ioErr("accept", res, serr)
	if err != nil {
		if closing {
			err = net.ErrClosed
		}
		return nil, netError("accept", l.network, nil, l.addr, err)
	}
	fd := int(res.Res)
	if aerr != nil {
		unix.Close(fd)
		return nil, netError("accept", l.network, nil, l.addr, aerr)
	}
	local, err := localAddr(fd, l.network)
	if err != nil {
		unix.Close(fd)
		return nil, netError("accept", l.network, nil, l.addr, err)
	}
	return newStreamConn(l.guard.rt, fd, l.network, local, raddr), nil
}

// peerAddr decodes the peer address accept filled in.
func (l *Listener) peerAddr(sa *uring.RawSockaddrAny, n uint32) (net.Addr, error) {
	if unixSotype(l.network) != 0 {
		return unixAddrFromSockaddr(sa, n, l.network), nil
	}
	ap, err := uring.AddrPortFromSockaddr(sa, n)
	if err != nil {
		return nil, err
	}
	return net.TCPAddrFromAddrPort(ap), nil
}

// localAddr returns the local address of fd, a stream socket of network.
func localAddr(fd int, network string) (net.Addr, error) {
	if unixSotype(network) != 0 {
		return unixSockname(fd, network)
	}
	ap, err := sockname(fd)
	if err != nil {
		return nil, err
	}
	return net.TCPAddrFromAddrPort(ap), nil
}

// Close stops listening, like net.Listener.Close: an Accept in progress
// returns net.ErrClosed promptly (Close shuts the socket down to wake it)
// and the descriptor is closed once no operation uses it, which Close waits
// for (or until ctx ends). A second Close returns net.ErrClosed. The first
// Close of a Unix listener bound to a file removes that file first, unless
// SetUnlinkOnClose(false) was called. A nil ctx is refused
// (runtime.ErrNilContext) and nothing happens: the listener stays open,
// its file in place, and a later Close with a context closes it.
func (l *Listener) Close(ctx context.Context) error {
	if !l.ok() {
		return invalidSocket("close")
	}
	if ctx == nil {
		return netError("close", l.network, nil, l.addr, runtime.ErrNilContext)
	}
	if l.path != "" && !l.guard.closing() {
		l.unlinkOnce.Do(func() {
			if l.unlink.Load() {
				// As net.UnixListener, whatever the file is now: a
				// failure (someone removed it already) is no concern.
				_ = unix.Unlink(l.path)
			}
		})
	}
	return closeErr(l.guard.close(ctx), l.network, nil, l.addr)
}

// SetUnlinkOnClose sets whether Close removes the socket file of a Unix
// listener (it does by default, for a listener Listen created), like
// net.UnixListener.SetUnlinkOnClose. It does nothing for other listeners,
// nor for a nil one.
func (l *Listener) SetUnlinkOnClose(unlink bool) {
	if l != nil {
		l.unlink.Store(unlink)
	}
}

// closeErr is the error of a socket's Close.
func closeErr(err error, network string, laddr, raddr net.Addr) error {
	switch {
	case err == nil:
		return nil
	case err == errAlreadyClosed:
		err = net.ErrClosed
	case errnoOf(err) != 0:
		err = os.NewSyscallError("close", err)
	}
	return netError("close", network, laddr, raddr, err)
}

// Dial connects to address, like net.Dial, on the runtime of ctx (see
// OpenFile). ctx bounds resolution and connection. Errors are
// *net.OpError: errors.Is(err, syscall.ECONNREFUSED) works.
//
// For network "tcp", "tcp4" or "tcp6", address is host:port with a literal
// IP or a host name (resolved with net.DefaultResolver; each address is
// tried in turn and the first error is returned if all fail).
//
// For network "unix" or "unixpacket", address is the path of the socket
// file, or "@name" for an abstract address; the Conn's addresses are then
// *net.UnixAddr values, the local one "@" (unnamed) as in package net.
// Dialling a path where nothing listens fails with an error matching
// syscall.ECONNREFUSED, a missing path with one matching fs.ErrNotExist.
func Dial(ctx context.Context, network, address string) (*Conn, error) {
	rt, err := runtimeOf(ctx)
	if err != nil {
		return nil, netError("dial", network, nil, nil, err)
	}
	if sotype := unixSotype(network); sotype != 0 {
		return dialUnix(ctx, rt, network, sotype, address)
	}
	ipNet := ipNetwork(network, "tcp")
	if ipNet == "" {
		return nil, netError("dial", network, nil, nil, net.UnknownNetworkError(network))
	}
	addrs, err := resolve(ctx, network, ipNet, address, false)
	if err != nil {
		return nil, netError("dial", network, nil, nil, err)
	}
	return firstOf(ctx, addrs, func(ap netip.AddrPort) (*Conn, error) {
		return dialTCP(rt, ctx, network, ap)
	})
}

func dialTCP(rt *runtime.Runtime, ctx context.Context, network string, ap netip.AddrPort) (*Conn, error) {
	raddr := net.TCPAddrFromAddrPort(ap)
	fd, err := newSocket(ap, unix.SOCK_STREAM, unix.IPPROTO_TCP, false)
	if err != nil {
		return nil, netError("dial", network, nil, raddr, err)
	}
	op := &sockaddrOp{opcode: uring.OpConnect, fd: fd}
	if op.salen, err = uring.SockaddrFromAddrPort(ap, &op.sa); err != nil {
		unix.Close(fd)
		return nil, netError("dial", network, nil, raddr, err)
	}
	return connect(ctx, rt, network, op, raddr)
}

// connect connects op.fd, a new stream socket, to the address in op and
// returns it as a Conn. It owns the descriptor: a failure closes it.
func connect(ctx context.Context, rt *runtime.Runtime, network string, op *sockaddrOp, raddr net.Addr) (*Conn, error) {
	// The Conn exists before it connects: a goroutine's connect waits in
	// the netpoller through the Conn's guard, which then owns the fd.
	c := newStreamConn(rt, op.fd, network, nil, raddr)
	res, serr := c.guard.submitPoll(ctx, op, true)
	if op.again && serr == nil {
		res = runtime.Result{Res: -int32(unix.EAGAIN)}
	}
	err := ioErr("connect", res, serr)
	var local net.Addr
	if err == nil {
		local, err = localAddr(op.fd, network)
	}
	if err != nil {
		c.guard.close(context.WithoutCancel(ctx))
		return nil, netError("dial", network, nil, raddr, err)
	}
	c.laddr = local
	if ta, ok := raddr.(*net.TCPAddr); ok && ta.IP.IsUnspecified() { // no allocation otherwise
		c.raddr = net.TCPAddrFromAddrPort(peerOf(op.fd, ta.AddrPort()))
	}
	return c, nil
}
