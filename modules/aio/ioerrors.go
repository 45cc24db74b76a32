package aio

import (
	"errors"
	"github.com/faio-go/faio/modules/runtime"
	"io/fs"
	"net"
	"os"
	"syscall"
)

// Errors of files and sockets follow the standard library, so code written
// against os and net reads them the same way:
//
//   - file operations return *fs.PathError{Op, Path, Err};
//   - socket operations return *net.OpError{Op, Net, Source, Addr, Err},
//     with the kernel's errno inside an *os.SyscallError naming the system
//     call ("connect: connection refused");
//   - errors.Is sees through both to the errno (syscall.ECONNREFUSED,
//     fs.ErrNotExist), to net.ErrClosed / fs.ErrClosed after Close, and to
//     context.Canceled / context.DeadlineExceeded when the caller's context
//     ended the operation;
//   - an orderly end of stream is a bare io.EOF, as in os and net.

// ioErr turns an operation's outcome into the error to wrap: the submit
// error (ctx.Err(), ErrNoRuntime ...) as is, a failed completion as a
// SyscallError naming syscall.
func ioErr(syscallName string, res runtime.Result, submitErr error) error {
	if submitErr != nil {
		return submitErr
	}
	if errno := res.Err(); errno != nil {
		return os.NewSyscallError(syscallName, errno)
	}
	return nil
}

// A zero File, Conn, Listener or UDPConn, and a nil pointer to one, names
// no descriptor (its fdGuard is zero: see fdGuard.valid). Each of its
// methods fails at once with an error of the type's form wrapping
// os.ErrInvalid, as os.File's methods do on a nil *File, and never reaches
// descriptor 0, the number the zero value holds. The value has no name,
// network or address for the error to carry.

// invalidFile is the error of File method op on a zero or nil File.
func invalidFile(op string) error { return pathError(op, "", os.ErrInvalid) }

// invalidSocket is the error of socket method op on a zero or nil Conn,
// Listener or UDPConn, or an adapter around one.
func invalidSocket(op string) error { return netError(op, "", nil, nil, os.ErrInvalid) }

// pathError wraps err for a file operation.
func pathError(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// netError wraps err for a socket operation between laddr and raddr (either
// may be nil).
func netError(op, network string, laddr, raddr net.Addr, err error) error {
	return &net.OpError{Op: op, Net: network, Source: laddr, Addr: raddr, Err: err}
}

// errnoOf returns the errno inside err, or 0.
func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return 0
}
