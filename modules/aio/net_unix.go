package aio

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// Unix domain stream sockets ("unix", "unixpacket") are Listeners and Conns
// like TCP's: only their addresses differ, a file system path or an
// abstract name ("@name", Linux) in a sockaddr_un instead of an IP and a
// port. Their operations are the same io_uring requests and system calls.

// unixSotype returns the socket type of a Unix stream network name, or 0
// for any other network.
func unixSotype(network string) int {
	switch network {
	case "unix":
		return unix.SOCK_STREAM
	case "unixpacket":
		return unix.SOCK_SEQPACKET
	}
	return 0
}

// maxUnixPath is the room for a name in sockaddr_un's sun_path.
const maxUnixPath = len(unix.RawSockaddrUnix{}.Path)

// unixSockaddr encodes name into sa as a sockaddr_un and returns its
// length, the way package syscall does: a path is NUL-terminated; "@name"
// is abstract, its '@' a NUL in the kernel's terms and not terminated; ""
// is the unnamed address (bind then picks an abstract name). A name too
// long for sun_path, or a path with a NUL byte in it (which the kernel
// would cut short), fails with an error matching syscall.EINVAL.
func unixSockaddr(name string, sa *uring.RawSockaddrAny) (uint32, error) {
	abstract := strings.HasPrefix(name, "@")
	room := maxUnixPath - 1 // a path needs its terminating NUL
	if abstract {
		room = maxUnixPath
	}
	switch {
	case len(name) > room:
		return 0, fmt.Errorf("socket name of %d bytes is longer than a sockaddr_un holds (%d): %w", len(name), room, syscall.EINVAL)
	case !abstract && strings.IndexByte(name, 0) >= 0:
		return 0, fmt.Errorf("socket path contains a NUL byte: %w", syscall.EINVAL)
	}
	*sa = uring.RawSockaddrAny{}
	un := (*unix.RawSockaddrUnix)(unsafe.Pointer(sa))
	un.Family = unix.AF_UNIX
	for i := 0; i < len(name); i++ {
		un.Path[i] = int8(name[i])
	}
	n := uint32(unsafe.Offsetof(un.Path))
	switch {
	case abstract:
		un.Path[0] = 0
		n += uint32(len(name))
	case name != "":
		n += uint32(len(name)) + 1
	}
	return n, nil
}

// unixAddrFromSockaddr decodes the first n bytes of sa, a sockaddr_un the
// kernel filled, as package net shows it: an abstract name with '@' for its
// leading NUL, up to the first NUL as for a path, and an unnamed socket as
// "@".
func unixAddrFromSockaddr(sa *uring.RawSockaddrAny, n uint32, network string) *net.UnixAddr {
	un := (*unix.RawSockaddrUnix)(unsafe.Pointer(sa))
	off := uint32(unsafe.Offsetof(un.Path))
	path := unsafe.Slice((*byte)(unsafe.Pointer(&un.Path[0])), maxUnixPath)
	path = path[:min(max(n, off)-off, uint32(maxUnixPath))]
	name := "@"
	if len(path) > 0 {
		b := make([]byte, len(path))
		copy(b, path)
		if b[0] == 0 {
			b[0] = '@'
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		name = string(b)
	}
	return &net.UnixAddr{Name: name, Net: network}
}

// unixSockname returns the local address of fd, a Unix socket
// (getsockname(2)).
func unixSockname(fd int, network string) (*net.UnixAddr, error) {
	var sa uring.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	if _, _, errno := unix.Syscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&n))); errno != 0 {
		return nil, os.NewSyscallError("getsockname", errno)
	}
	return unixAddrFromSockaddr(&sa, n, network), nil
}

// errReusePortUnix is the error of a Unix Listen with ReusePort.
var errReusePortUnix = fmt.Errorf("SO_REUSEPORT on a Unix socket: %w", syscall.EOPNOTSUPP)

// listenUnix creates a Unix listener of type sotype bound to address.
func (lc ListenConfig) listenUnix(rt *runtime.Runtime, network string, sotype int, address string) (*Listener, error) {
	fail := func(err error) (*Listener, error) {
		return nil, netError("listen", network, nil, &net.UnixAddr{Name: address, Net: network}, err)
	}
	var sa uring.RawSockaddrAny
	salen, err := unixSockaddr(address, &sa)
	if err != nil {
		return fail(err)
	}
	if lc.ReusePort {
		// Some kernels accept the option and ignore it; say so on all.
		return fail(errReusePortUnix)
	}
	fd, err := unix.Socket(unix.AF_UNIX, sotype|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(os.NewSyscallError("socket", err))
	}
	if _, _, errno := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&sa)), uintptr(salen)); errno != 0 {
		unix.Close(fd)
		return fail(os.NewSyscallError("bind", errno))
	}
	path := ""
	if address != "" && address[0] != '@' {
		path = address
	}
	if err := unix.Listen(fd, lc.backlog()); err != nil {
		unix.Close(fd)
		if path != "" {
			unix.Unlink(path) // bind created it
		}
		return fail(os.NewSyscallError("listen", err))
	}
	local, err := unixSockname(fd, network)
	if err != nil {
		unix.Close(fd)
		if path != "" {
			unix.Unlink(path)
		}
		return fail(err)
	}
	l := &Listener{network: network, addr: local, path: path}
	l.unlink.Store(true)
	l.guard.init(rt, fd, true)
	return l, nil
}

// dialUnix connects a Unix socket of type sotype to address.
func dialUnix(ctx context.Context, rt *runtime.Runtime, network string, sotype int, address string) (*Conn, error) {
	raddr := &net.UnixAddr{Name: address, Net: network}
	if address == "" {
		return nil, netError("dial", network, nil, nil, errMissingAddress)
	}
	op := &sockaddrOp{opcode: uring.OpConnect}
	var err error
	if op.salen, err = unixSockaddr(address, &op.sa); err != nil {
		return nil, netError("dial", network, nil, raddr, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, netError("dial", network, nil, raddr, err)
	}
	if op.fd, err = unix.Socket(unix.AF_UNIX, sotype|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0); err != nil {
		return nil, netError("dial", network, nil, raddr, os.NewSyscallError("socket", err))
	}
	// A Unix-domain connect does not wait for the peer: it completes at
	// once, or fails at once, with EAGAIN when the listener's backlog is
	// full, as package net's dial reports it. So it is made here, non-
	// blocking, by every caller: a task's IORING_OP_CONNECT would wait
	// for room in that backlog instead, as long as ctx let it. The socket
	// is blocking again afterwards, as every new Conn's (see fdGuard).
	errno := unixConnect(op)
	if errno == 0 {
		errno = unixErrno(unix.SetNonblock(op.fd, false))
	}
	if errno != 0 {
		unix.Close(op.fd)
		return nil, netError("dial", network, nil, raddr, os.NewSyscallError("connect", errno))
	}
	c := newStreamConn(rt, op.fd, network, nil, raddr)
	if c.laddr, err = localAddr(op.fd, network); err != nil {
		c.guard.close(context.WithoutCancel(ctx))
		return nil, netError("dial", network, nil, raddr, err)
	}
	return c, nil
}

// unixConnect connects op.fd, a non-blocking Unix-domain socket, to op's
// address. A connect interrupted by a signal is made again (EISCONN then
// means the first one went through).
func unixConnect(op *sockaddrOp) syscall.Errno {
	for retried := false; ; retried = true {
		_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(op.fd), uintptr(unsafe.Pointer(&op.sa)), uintptr(op.salen))
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EISCONN && retried:
			return 0
		}
		return errno
	}
}

// unixErrno is err's errno, or EINVAL for an error that has none.
func unixErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errno, ok := err.(syscall.Errno); ok {
		return errno
	}
	return unix.EINVAL
}
