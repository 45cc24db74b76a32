//go:build mage && linux

package main

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioURingUnavailable reports why this process may not set up an io_uring
// (sysctl kernel.io_uring_disabled, a container's seccomp filter, a kernel
// without it), or nil where it may.
func ioURingUnavailable() error {
	var params [120]byte // struct io_uring_params, all zero
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
	switch errno {
	case 0:
		unix.Close(int(fd))
		return nil
	case unix.EPERM, unix.ENOSYS:
		return fmt.Errorf("io_uring_setup: %w", errno)
	}
	return nil // any other failure is the tests' to report
}
