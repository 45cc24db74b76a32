package uring

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	// ErrClosed is returned by every method of a Ring after Close.
	ErrClosed = errors.New("faio/uring: ring closed")

	// ErrNotSupported means the kernel or this binding lacks a feature:
	// io_uring itself (ENOSYS at setup), 128-byte SQEs or 32-byte CQEs, or
	// a setup flag newer than this package.
	// Errors from New that match it also match the underlying errno.
	ErrNotSupported = errors.New("faio/uring: not supported")

	// ErrCQOverflow means the kernel dropped completions because the CQ
	// ring was full and it could not hold them back. The operations whose
	// CQEs were lost will never complete: the caller must treat their state
	// as unknown. Returned (wrapped in *OverflowError) once per loss.
	ErrCQOverflow = errors.New("faio/uring: completion queue overflow, completions lost")
)

// Error is a failed io_uring system call: which call, and the errno. It
// unwraps to the syscall.Errno, so errors.Is(err, syscall.EPERM) works. For
// io_uring_setup, Hint explains the usual cause.
type Error struct {
	Op    string        // "io_uring_setup", "io_uring_enter", "io_uring_register(files)", "mmap" ...
	Errno syscall.Errno // the kernel's error number
	Hint  string        // a likely cause; empty when there is nothing useful to add
}

func (e *Error) Error() string {
	msg := "faio/uring: " + e.Op + ": " + e.Errno.Error()
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Unwrap returns the errno.
func (e *Error) Unwrap() error { return e.Errno }

// Is reports ENOSYS from io_uring_setup as ErrNotSupported too, so callers
// can test for "no io_uring here" without knowing errnos.
func (e *Error) Is(target error) bool {
	return target == ErrNotSupported && e.Errno == unix.ENOSYS
}

// OverflowError reports CQEs lost to a full completion queue. It matches
// ErrCQOverflow with errors.Is.
type OverflowError struct {
	Dropped uint32 // completions lost since the previous report (0 if the kernel gave no count)
}

func (e *OverflowError) Error() string {
	if e.Dropped == 0 {
		return ErrCQOverflow.Error()
	}
	return fmt.Sprintf("%v: %d dropped", ErrCQOverflow, e.Dropped)
}

// Unwrap returns ErrCQOverflow.
func (e *OverflowError) Unwrap() error { return ErrCQOverflow }

// ResultError turns a CQE result into an error: nil when res >= 0, else the
// syscall.Errno -res. It is the one place CQE results become errors (CQE.Err
// calls it); returning the bare Errno keeps the reap path allocation-free and
// lets errors.Is(err, syscall.ECONNRESET) and errors.Is(err, fs.ErrNotExist)
// work. Callers add their own context (operation, path) when they wrap it.
func ResultError(res int32) error {
	if res >= 0 {
		return nil
	}
	return syscall.Errno(-res)
}

// sysError wraps errno from a system call other than setup.
func sysError(op string, errno syscall.Errno) error {
	return &Error{Op: op, Errno: errno}
}

// setupError explains why io_uring_setup failed, for the errnos that have a
// cause outside the caller's arguments.
func setupError(errno syscall.Errno, flags uint32) error {
	e := &Error{Op: "io_uring_setup", Errno: errno}
	switch errno {
	case unix.ENOSYS:
		e.Hint = "kernel built without io_uring (CONFIG_IO_URING) or the system call is filtered"
	case unix.EPERM:
		e.Hint = permissionHint(readSysctl("/proc/sys/kernel/io_uring_disabled"), flags)
	case unix.ENOMEM:
		e.Hint = "out of locked memory: raise RLIMIT_MEMLOCK (ulimit -l" + memlockLimit() + ") or use fewer entries"
	case unix.EINVAL:
		e.Hint = "entries must be 1..32768 (or set SetupClamp), CQ entries at least the SQ entries, and every flag known to this kernel"
	case unix.EMFILE, unix.ENFILE:
		e.Hint = "no file descriptor left for the ring"
	}
	return e
}

// permissionHint names the reason for EPERM given the io_uring_disabled
// sysctl value ("" when it cannot be read).
func permissionHint(disabled string, flags uint32) string {
	switch disabled {
	case "2":
		return "io_uring is disabled for everyone by sysctl kernel.io_uring_disabled=2"
	case "1":
		return "sysctl kernel.io_uring_disabled=1 limits io_uring to CAP_SYS_ADMIN and the group in kernel.io_uring_group"
	}
	if flags&SetupSQPoll != 0 {
		return "SQPOLL may need CAP_SYS_NICE on this kernel, or a seccomp filter blocks io_uring"
	}
	return "io_uring is blocked, most likely by a seccomp filter (container runtimes block it by default)"
}

func readSysctl(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func memlockLimit() string {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim) != nil {
		return ""
	}
	if lim.Cur == unix.RLIM_INFINITY {
		return " is unlimited"
	}
	return fmt.Sprintf(" is %d KiB", lim.Cur/1024)
}
