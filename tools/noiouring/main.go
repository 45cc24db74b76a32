//go:build linux

// Command noiouring runs a program with io_uring blocked by a seccomp filter,
// the way container runtimes block it, so that CI can prove faio falls back
// when io_uring is unavailable.
//
// Usage:
//
//	noiouring [-errno EPERM|ENOSYS] [--] program [args...]
//
// It sets no_new_privs, installs a seccomp filter that makes io_uring_setup,
// io_uring_enter and io_uring_register fail with the chosen errno (EPERM by
// default, what Docker's default profile returns; ENOSYS mimics a kernel
// built without io_uring), and then execs program, resolved through $PATH,
// with the environment passed through. The filter is inherited by the
// program and everything it starts, and cannot be removed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// io_uring syscall numbers. They are the same in every syscall table the
// filter checks (x86_64, aarch64, and the i386 and arm compat tables), since
// Linux 5.1 gave new syscalls one number on all architectures.
const (
	nrIOUringSetup    = 425
	nrIOUringEnter    = 426
	nrIOUringRegister = 427
)

// x32SyscallBit marks an x32-ABI syscall on x86_64 (__X32_SYSCALL_BIT). x32
// reaches io_uring as 0x40000000|425 and so on, so the filter clears the bit
// before comparing.
const x32SyscallBit = 0x40000000

// Offsets of the fields of struct seccomp_data that the filter loads.
const (
	offNr   = 0 // int nr
	offArch = 4 // __u32 arch (AUDIT_ARCH_*)
)

// errnos are the values -errno accepts.
var errnos = map[string]unix.Errno{
	"EPERM":  unix.EPERM,
	"ENOSYS": unix.ENOSYS,
}

const usageText = `usage: noiouring [-errno EPERM|ENOSYS] [--] program [args...]

Runs program with io_uring_setup, io_uring_enter and io_uring_register
blocked by a seccomp filter that makes them fail with the given errno.

  -errno name   errno the blocked syscalls return: EPERM (default, what
                Docker's default seccomp profile returns) or ENOSYS (as
                on a kernel without io_uring)
`

func main() {
	// The filter and no_new_privs are set on this thread (and synced to
	// the others), and the exec must happen on it.
	runtime.LockOSThread()
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run parses args, installs the filter and execs the program. It returns
// only on failure, with the exit status.
func run(args []string, stderr io.Writer) int {
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "noiouring: "+format+"\n", a...)
		fmt.Fprint(stderr, usageText)
		return 2
	}
	fs := flag.NewFlagSet("noiouring", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and usage are printed below
	fs.Usage = func() {}
	errnoName := fs.String("errno", "EPERM", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usageText)
			return 0
		}
		return usage("%v", err)
	}
	errno, ok := errnos[strings.ToUpper(*errnoName)]
	if !ok {
		return usage("-errno %q: want EPERM or ENOSYS", *errnoName)
	}
	if fs.NArg() == 0 {
		return usage("no program given")
	}
	argv := fs.Args()
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "noiouring: %v\n", err)
		return 127
	}
	if err := blockIOUring(errno); err != nil {
		fmt.Fprintf(stderr, "noiouring: %v\n", err)
		return 1
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(stderr, "noiouring: exec %s: %v\n", path, err)
	return 126
}

// filter returns the seccomp program: io_uring syscalls of the known
// architectures fail with errno, everything else is allowed.
func filter(errno unix.Errno) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS // A = 32-bit word at K
		and = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K // jump Jt if A == K, else Jf
		ja  = unix.BPF_JMP | unix.BPF_JA               // jump K
		ret = unix.BPF_RET | unix.BPF_K
	)
	// Jumps are relative: the next instruction is +0. The numbers on the
	// right are the instruction indexes jumps land on.
	return []unix.SockFilter{
		/* 0 */ {Code: ld, K: offArch},
		/* 1 */ {Code: jeq, K: unix.AUDIT_ARCH_X86_64, Jt: 3, Jf: 0}, // -> 5
		/* 2 */ {Code: jeq, K: unix.AUDIT_ARCH_AARCH64, Jt: 5, Jf: 0}, // -> 8
		/* 3 */ {Code: jeq, K: unix.AUDIT_ARCH_I386, Jt: 4, Jf: 0}, // -> 8 (x86_64 compat)
		/* 4 */ {Code: jeq, K: unix.AUDIT_ARCH_ARM, Jt: 3, Jf: 7}, // -> 8 (aarch64 compat), else foreign arch: -> 12 allow

		// x86_64: clear the x32 bit, so x32 syscalls are no escape.
		/* 5 */ {Code: ld, K: offNr},
		/* 6 */ {Code: and, K: ^uint32(x32SyscallBit)},
		/* 7 */ {Code: ja, K: 1}, // -> 9

		// aarch64, i386, arm: the number as is.
		/* 8 */ {Code: ld, K: offNr},

		/* 9 */ {Code: jeq, K: nrIOUringSetup, Jt: 3, Jf: 0}, // -> 13
		/* 10 */ {Code: jeq, K: nrIOUringEnter, Jt: 2, Jf: 0}, // -> 13
		/* 11 */ {Code: jeq, K: nrIOUringRegister, Jt: 1, Jf: 0}, // -> 13
		/* 12 */ {Code: ret, K: unix.SECCOMP_RET_ALLOW},
		/* 13 */ {Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(errno)&unix.SECCOMP_RET_DATA},
	}
}

// blockIOUring sets no_new_privs (required to install a filter without
// CAP_SYS_ADMIN) and installs the filter on every thread of the process.
func blockIOUring(errno unix.Errno) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	insns := filter(errno)
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	// TSYNC also sets no_new_privs on the other threads.
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(insns)
	switch {
	case e == 0 && r == 0:
		return nil
	case e == 0:
		return fmt.Errorf("seccomp(SECCOMP_FILTER_FLAG_TSYNC): thread %d could not be synchronized", r)
	case e != unix.ENOSYS && e != unix.EINVAL:
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", e)
	}
	// No seccomp(2) or no TSYNC: filter this thread only, which is the one
	// that execs, and the exec leaves it the only thread.
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECCOMP): %w", err)
	}
	runtime.KeepAlive(insns)
	return nil
}
