package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// ringFds returns the io_uring descriptors of this process.
func ringFds() []int {
	ents, _ := os.ReadDir("/proc/self/fd")
	var fds []int
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || link != "anon_inode:[io_uring]" {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err == nil {
			fds = append(fds, fd)
		}
	}
	return fds
}

// A program that closes a worker's ring descriptor by mistake gets a loud,
// prompt stop with a message naming the cause, never a worker spinning on
// EBADF while deadlines and Close hang (as before: 100% CPU, IOErrors up by
// millions a second, a 3 s ReadFile that never returned). The child
// process closes every ring descriptor it finds in /proc/self/fd and then
// reads a file with a 3 s deadline; the parent checks how it ended.
func TestRingFdClosedStopsTheProcess(t *testing.T) {
	if os.Getenv("FAIO_TEST_CLOSE_RING") == "1" {
		closeRingsAndRead()
		return
	}
	if rt, err := New(Config{Workers: 1}); err != nil || rt.Backend() != BackendIOUring {
		if err == nil {
			rt.Close()
		}
		t.Skip("needs io_uring: the runtime runs on the portable backend")
	} else {
		rt.Close()
	}
	for _, mode := range []string{"closed", "reused"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestRingFdClosedStopsTheProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "FAIO_TEST_CLOSE_RING=1", "FAIO_TEST_RING_MODE="+mode)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("the process still ran 30s after its ring descriptors were closed:\n%s", out.String())
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("child ended with %v, want a non-zero exit:\n%s", err, out.String())
			}
			msg := out.String()
			for _, want := range []string{"cannot enter its io_uring", "closed or replaced behind the runtime's back"} {
				if !bytes.Contains(out.Bytes(), []byte(want)) {
					t.Errorf("output lacks %q:\n%s", want, msg)
				}
			}
			if bytes.Contains(out.Bytes(), []byte("UNREACHABLE")) {
				t.Errorf("the read returned as if nothing happened:\n%s", msg)
			}
			t.Logf("child stopped after %v", time.Since(start).Round(time.Millisecond))
		})
	}
}

func closeRingsAndRead() {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		fmt.Println("New:", err)
		os.Exit(0) // the parent fails: no "cannot enter" message
	}
	for _, fd := range ringFds() {
		syscall.Close(fd)
		if os.Getenv("FAIO_TEST_RING_MODE") == "reused" {
			// The number now names an ordinary file.
			f, err := os.Open(os.Args[0])
			if err == nil && int(f.Fd()) != fd {
				f.Close()
			}
		}
	}
	f, err := os.Open(os.Args[0])
	if err != nil {
		fmt.Println(err)
		os.Exit(0)
	}
	_, err = BlockOn(rt, func(ctx context.Context) (Result, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return Submit(ctx, &readOp{fd: int(f.Fd()), buf: make([]byte, 4096)})
	})
	fmt.Println("UNREACHABLE: the read returned", err)
	rt.Close()
	os.Exit(0)
}
