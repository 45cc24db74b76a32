//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperEnv selects what TestHelperChild does when the test binary is
// re-run as a child.
const helperEnv = "NOIOURING_TEST_HELPER"

// ioUringSetup calls io_uring_setup(1, &params) with zeroed params on nr
// and returns the errno name, or "ok" (closing the ring) on success.
func ioUringSetup(nr uintptr) string {
	var params [120]byte // struct io_uring_params
	fd, _, e := unix.Syscall(nr, 1, uintptr(unsafe.Pointer(&params)), 0)
	if e != 0 {
		return unix.ErrnoName(e)
	}
	unix.Close(int(fd))
	return "ok"
}

// TestHelperChild is not a test: run as a child with helperEnv set, it
// prints lines "name: result" for the parent to check.
func TestHelperChild(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper for the other tests")
	}
	switch mode {
	case "setup":
		fmt.Printf("io_uring_setup: %s\n", ioUringSetup(unix.SYS_IO_URING_SETUP))
		if runtime.GOARCH == "amd64" {
			fmt.Printf("x32 io_uring_setup: %s\n", ioUringSetup(x32SyscallBit|unix.SYS_IO_URING_SETUP))
		}
	case "other":
		fmt.Printf("files: %s\n", result(files()))
		// A goroutine on a fresh thread: threads started after the exec
		// inherit the filter too.
		done := make(chan string)
		go func() {
			runtime.LockOSThread()
			done <- ioUringSetup(unix.SYS_IO_URING_SETUP)
		}()
		fmt.Printf("goroutine io_uring_setup: %s\n", <-done)
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			fmt.Printf("status: %v\n", err)
		}
		for line := range strings.Lines(string(status)) {
			if f := strings.Fields(line); len(f) == 2 && (f[0] == "Seccomp:" || f[0] == "NoNewPrivs:") {
				fmt.Printf("%s %s\n", f[0], f[1])
			}
		}
	default:
		t.Fatalf("unknown %s=%q", helperEnv, mode)
	}
}

// files creates, writes, reads back and removes a temporary file.
func files() error {
	f, err := os.CreateTemp("", "noiouring")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := f.WriteString("hello"); err != nil {
		return err
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		return err
	}
	if string(b) != "hello" {
		return fmt.Errorf("read back %q", b)
	}
	return nil
}

func result(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// buildLauncher builds noiouring into a temporary directory.
func buildLauncher(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build the launcher: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "noiouring")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// child runs the test binary as TestHelperChild in mode, under launcher
// with flags unless launcher is "", and returns its output as a map of
// "name: result" lines.
func child(t *testing.T, mode, launcher string, flags ...string) map[string]string {
	t.Helper()
	argv := []string{os.Args[0], "-test.run=^TestHelperChild$", "-test.v=false"}
	if launcher != "" {
		argv = append(append(append([]string{launcher}, flags...), "--"), argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	if _, ok := os.LookupEnv("GORACE"); !ok {
		// Under -race the child would sleep a second at exit.
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%q: %v\nstdout:\n%s\nstderr:\n%s", argv, err, out, &stderr)
	}
	res := make(map[string]string)
	for line := range strings.Lines(string(out)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
			res[k] = v
		} else if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			res[k] = v
		}
	}
	return res
}

func TestLauncher(t *testing.T) {
	launcher := buildLauncher(t)

	t.Run("baseline", func(t *testing.T) {
		got := child(t, "setup", "")["io_uring_setup"]
		if got != "ok" {
			t.Skipf("io_uring_setup fails without the launcher on this machine (%s), so blocking it proves nothing here", got)
		}
	})

	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, "EPERM"},
		{[]string{"-errno", "EPERM"}, "EPERM"},
		{[]string{"-errno", "ENOSYS"}, "ENOSYS"},
	} {
		t.Run(strings.Join(append([]string{"errno"}, tc.flags...), " "), func(t *testing.T) {
			res := child(t, "setup", launcher, tc.flags...)
			if got := res["io_uring_setup"]; got != tc.want {
				t.Errorf("io_uring_setup under %q = %s, want %s", tc.flags, got, tc.want)
			}
			// Without the filter the x32 number gives ENOSYS (no x32
			// support) or, from a 64-bit process, an x32 io_uring_setup;
			// with it, it gets the filter's errno.
			if runtime.GOARCH == "amd64" && tc.want == "EPERM" {
				if got := res["x32 io_uring_setup"]; got != "EPERM" {
					t.Errorf("x32 io_uring_setup under %q = %s, want EPERM", tc.flags, got)
				}
			}
		})
	}

	t.Run("other syscalls", func(t *testing.T) {
		res := child(t, "other", launcher)
		for k, want := range map[string]string{
			"files":                    "ok",
			"goroutine io_uring_setup": "EPERM",
			"Seccomp":                  "2",
			"NoNewPrivs":               "1",
		} {
			if got := res[k]; got != want {
				t.Errorf("%s %s, want %s (child output %v)", k, got, want, res)
			}
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{nil, "noiouring: no program given"},
			{[]string{"--"}, "noiouring: no program given"},
			{[]string{"-errno", "EBADF", "true"}, `noiouring: -errno "EBADF": want EPERM or ENOSYS`},
			{[]string{"-bogus", "true"}, "noiouring: flag provided but not defined: -bogus"},
			{[]string{"-errno"}, "noiouring: flag needs an argument: -errno"},
			{[]string{"--", "/nonexistent/program"}, "noiouring: exec: \"/nonexistent/program\""},
			{[]string{"no-such-program-noiouring"}, "noiouring: exec: \"no-such-program-noiouring\": executable file not found"},
		} {
			cmd := exec.Command(launcher, tc.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Errorf("%q: err %v, want a non-zero exit", tc.args, err)
				continue
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%q: stderr %q, want it to contain %q", tc.args, &stderr, tc.want)
			}
			if strings.Contains(tc.want, "exec:") {
				continue // no usage message for a missing program
			}
			if ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "usage: noiouring") {
				t.Errorf("%q: exit %d, stderr %q; want exit 2 and the usage message", tc.args, ee.ExitCode(), &stderr)
			}
		}
	})

	t.Run("exit status passes through", func(t *testing.T) {
		err := exec.Command(launcher, "sh", "-c", "exit 7").Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Errorf("sh -c 'exit 7' under the launcher: %v, want exit status 7", err)
		}
	})
}

// TestFilterJumps checks that every jump of the filter lands inside it and
// that the last instructions return.
func TestFilterJumps(t *testing.T) {
	prog := filter(unix.EPERM)
	for i, ins := range prog {
		if ins.Code&0x07 != unix.BPF_JMP {
			continue
		}
		targets := []int{i + 1 + int(ins.Jt), i + 1 + int(ins.Jf)}
		if ins.Code&0xf0 == unix.BPF_JA {
			targets = []int{i + 1 + int(ins.K)}
		}
		for _, to := range targets {
			if to >= len(prog) {
				t.Errorf("instruction %d jumps to %d, past the end (%d)", i, to, len(prog))
			}
		}
	}
	if last := prog[len(prog)-1]; last.Code != unix.BPF_RET|unix.BPF_K || last.K != unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM) {
		t.Errorf("last instruction %+v, want RET ERRNO|EPERM", last)
	}
}
