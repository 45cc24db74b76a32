package main

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// newPortableState is a runtime on the portable backend, for the C
// socket calls' readiness path (io_portable.go).
func newPortableState(t *testing.T) *rtState {
	t.Helper()
	h, rc := newRuntime(runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	if rc != codeOK {
		t.Fatalf("newRuntime: %d", rc)
	}
	s, _ := runtimeOf(h)
	t.Cleanup(func() { freeRuntime(h, 0) })
	return s
}

func socketPair(t *testing.T) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(fds[0])
		unix.Close(fds[1])
	})
	return fds[0], fds[1]
}

// startRecv runs a C receive of fd into buf on a task of s's runtime.
func startRecv(s *rtState, fd int, buf []byte) *runtime.JoinHandle[int64] {
	j := &ioJob{op: uring.OpRecv, fd: int32(fd), buf: buf}
	return runtime.SpawnOn(s.rt, func(ctx context.Context) (int64, error) {
		return j.portable(ctx, s), nil
	})
}

func joinWithin(t *testing.T, h *runtime.JoinHandle[int64], what string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := h.Join(ctx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return r
}

// waiters returns how many operations wait in the poller on the socket
// the program's descriptor fd names now (0 if none).
func (p *pollRegistry) waiters(fd int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.m[fd]; e != nil {
		return e.refs
	}
	return 0
}

// A receive waiting on a socket keeps waiting on that socket when the C
// program closes its descriptor and the number comes back for a new
// socket, as it does on a ring: the new socket's receive gets the new
// socket's data, and the old one the old socket's.
func TestPortableRecvSurvivesDescriptorReuse(t *testing.T) {
	s := newPortableState(t)
	a0, a1 := socketPair(t)
	oldBuf := make([]byte, 16)
	old := startRecv(s, a0, oldBuf)
	for deadline := time.Now().Add(5 * time.Second); s.pollFDs.waiters(a0) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the receive never waited in the poller")
		}
	}

	// The program closes a0 and a new socket gets its number.
	b0, b1 := socketPair(t)
	if err := unix.Dup3(b0, a0, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	newBuf := make([]byte, 16)
	fresh := startRecv(s, a0, newBuf)
	if _, err := unix.Write(b1, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if n := joinWithin(t, fresh, "the new socket's receive"); n != 3 || string(newBuf[:3]) != "new" {
		t.Fatalf("the new socket's receive: %d %q, want 3 \"new\"", n, newBuf[:max(n, 0)])
	}
	select {
	case <-old.Done():
		t.Fatal("the old socket's receive completed with no data sent to it")
	default:
	}

	if _, err := unix.Write(a1, []byte("old!")); err != nil {
		t.Fatal(err)
	}
	if n := joinWithin(t, old, "the old socket's receive"); n != 4 || string(oldBuf[:4]) != "old!" {
		t.Fatalf("the old socket's receive: %d %q, want 4 \"old!\"", n, oldBuf[:max(n, 0)])
	}
	if n := s.pollFDs.waiters(a0); n != 0 {
		t.Fatalf("%d registrations left", n)
	}
	if len(s.pollFDs.m) != 0 {
		t.Fatalf("registry not empty: %v", s.pollFDs.m)
	}
}

// Two receives waiting on one socket share its registration, and each gets
// its own data.
func TestPortableRecvsShareARegistration(t *testing.T) {
	s := newPortableState(t)
	a0, a1 := socketPair(t)
	b1, b2 := make([]byte, 1), make([]byte, 1)
	h1 := startRecv(s, a0, b1)
	h2 := startRecv(s, a0, b2)
	for deadline := time.Now().Add(5 * time.Second); s.pollFDs.waiters(a0) != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d receives wait in the poller, want 2", s.pollFDs.waiters(a0))
		}
	}
	if _, err := unix.Write(a1, []byte("xy")); err != nil {
		t.Fatal(err)
	}
	n1, n2 := joinWithin(t, h1, "first receive"), joinWithin(t, h2, "second receive")
	got := string(b1[:n1]) + string(b2[:n2])
	if n1 != 1 || n2 != 1 || (got != "xy" && got != "yx") {
		t.Fatalf("receives got %d %q and %d %q, want one byte each of \"xy\"", n1, b1, n2, b2)
	}
	if len(s.pollFDs.m) != 0 {
		t.Fatalf("registry not empty: %v", s.pollFDs.m)
	}
}

// A receive started with its context already ended takes nothing from the
// socket, as a ring would not start it.
func TestPortableRecvCancelledBeforeStart(t *testing.T) {
	s := newPortableState(t)
	a0, a1 := socketPair(t)
	if _, err := unix.Write(a1, []byte("z")); err != nil {
		t.Fatal(err)
	}
	j := &ioJob{op: uring.OpRecv, fd: int32(a0), buf: make([]byte, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := j.portable(ctx, s); r != int64(codeECANCELED) {
		t.Fatalf("result %d, want FAIO_ECANCELED (%d)", r, codeECANCELED)
	}
	buf := make([]byte, 1)
	if n, err := unix.Read(a0, buf); n != 1 || err != nil || buf[0] != 'z' {
		t.Fatalf("the byte sent: read %d %v %q, want it still there", n, err, buf)
	}
}

// A MSG_WAITALL receive goes on after a short read until its buffer is
// full; cancelled by the runtime's shutdown meanwhile, it returns the
// bytes it took, which are in the buffer, rather than FAIO_ECANCELED,
// which would lose them.
func TestPortableRecvWaitAll(t *testing.T) {
	s := newPortableState(t)
	a0, a1 := socketPair(t)
	buf := make([]byte, 6)
	stop := make(chan struct{})
	j := &ioJob{op: uring.OpRecv, fd: int32(a0), buf: buf, flags: unix.MSG_WAITALL}
	h := runtime.SpawnOn(s.rt, func(ctx context.Context) (int64, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			<-stop
			cancel()
		}()
		return j.portable(ctx, s), nil
	})
	if _, err := unix.Write(a1, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); s.pollFDs.waiters(a0) == 0 || j.moved == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the receive never waited for the rest")
		}
	}
	close(stop)
	if n := joinWithin(t, h, "the receive"); n != 3 || string(buf[:3]) != "abc" {
		t.Fatalf("the cancelled receive: %d %q, want 3 \"abc\"", n, buf[:max(n, 0)])
	}
}

// epollFds returns the descriptors of the process that are epoll
// instances.
func epollFds(t *testing.T) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := map[int]bool{}
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == "anon_inode:[eventpoll]" {
			fd, _ := strconv.Atoi(e.Name())
			fds[fd] = true
		}
	}
	return fds
}

// A receive waiting in a poller that loses its epoll descriptor (closed by
// a stray close elsewhere in the program) completes with the errno that
// showed it, not with FAIO_ECANCELED, which faio.h gives to operations
// cancelled by a runtime's shutdown (found by a reviewer).
func TestPortableRecvInABrokenPollerIsNoCancellation(t *testing.T) {
	before := epollFds(t)
	s := newPortableState(t)
	a0, a1 := socketPair(t)
	h := startRecv(s, a0, make([]byte, 16))
	for deadline := time.Now().Add(5 * time.Second); s.pollFDs.waiters(a0) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the receive never waited in the poller")
		}
	}
	var mine []int
	for fd := range epollFds(t) {
		if !before[fd] {
			mine = append(mine, fd)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("found %d new epoll instances (%v), want the runtime's one", len(mine), mine)
	}
	if err := unix.Close(mine[0]); err != nil {
		t.Fatal(err)
	}
	// The poller's watcher checks its descriptor every second.
	if r := joinWithin(t, h, "the receive in the broken poller"); r != -int64(unix.EBADF) {
		t.Fatalf("the receive completed with %d, want -EBADF (%d)", r, -int64(unix.EBADF))
	}
	// A later one waits with poll(2), as faio.h says.
	buf := make([]byte, 16)
	later := startRecv(s, a0, buf)
	if _, err := unix.Write(a1, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if n := joinWithin(t, later, "a receive after the loss"); n != 4 || string(buf[:4]) != "late" {
		t.Fatalf("a receive after the loss: %d %q, want 4 \"late\"", n, buf[:max(n, 0)])
	}
}
