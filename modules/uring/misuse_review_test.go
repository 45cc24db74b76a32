package uring

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Misuse of the binding, found by a reviewer: each now gets a clear error
// and keeps memory safe, where it crashed the process, acted on another
// descriptor, or let the kernel write into freed memory.

// CQPending on a closed ring reports nothing: it dereferenced the nil
// CQ pointers.
func TestCQPendingAfterCloseReportsNothing(t *testing.T) {
	needRing(t)
	r, err := New(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("CQPending after Close panicked: %v", p)
		}
	}()
	if p, h := r.CQPending(); p != 0 || h {
		t.Errorf("CQPending after Close = %d, %v", p, h)
	}
}

// A descriptor that does not fit in int32 fails with EBADF: it was
// truncated to another, valid descriptor, and the write landed there.
func TestAnFdPastInt32IsRefusedNotTruncated(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	var p [2]int
	p[0], p[1] = pipeFds(t)
	msg := []byte("misdirected")
	getSQE(t, r).PrepWrite(1<<32|p[1], msg, CurrentPos)
	if _, err := r.SubmitAndWait(1); err != nil {
		t.Fatal(err)
	}
	c, err := r.PeekCQE()
	if err != nil || c == nil {
		t.Fatal(c, err)
	}
	res := c.Res
	r.CQESeen(c)
	if res >= 0 {
		t.Errorf("PrepWrite(fd=1<<32|%d) wrote %d bytes to fd %d; want an error (EBADF)", p[1], res, p[1])
	}
}

// UnregisterBuffers succeeds while a READ_FIXED still holds the buffer:
// the ring keeps the buffer reachable. It dropped its reference, the
// collector freed the memory and reused it, and the kernel's later write
// corrupted whatever lived there then.
func TestUnregisteredBuffersStayReachableForRequestsInFlight(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	var p [2]int
	p[0], p[1] = pipeFds(t)
	const size = 1 << 20
	func() {
		buf := make([]byte, size)
		if err := r.RegisterBuffers([][]byte{buf}); err != nil {
			t.Fatal(err)
		}
		getSQE(t, r).PrepReadFixed(p[0], buf, 0, 0)
		if _, err := r.Submit(); err != nil {
			t.Fatal(err)
		}
	}()
	if err := r.UnregisterBuffers(); err != nil {
		t.Fatalf("UnregisterBuffers with a read in flight: %v (an error here would be the fix)", err)
	}
	// The only reference to buf was the ring's; collect it and reuse the memory.
	var victims [][]byte
	for range 8 {
		runtime.GC()
		victims = append(victims, make([]byte, size))
	}
	payload := bytes.Repeat([]byte{0xAB}, 4096)
	if _, err := unix.Write(p[1], payload); err != nil {
		t.Fatal(err)
	}
	c, err := r.WaitCQE(2 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("READ_FIXED completed after UnregisterBuffers: res=%d", c.Res)
	r.CQESeen(c)
	for i, v := range victims {
		if bytes.IndexByte(v, 0xAB) >= 0 {
			t.Errorf("live allocation %d was overwritten by the kernel after UnregisterBuffers", i)
		}
	}
}

// A nil socket address is an error; it panicked.
func TestNilSockaddrIsAnError(t *testing.T) {
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("AddrPortFromSockaddr(nil, 16) panicked: %v", p)
		}
	}()
	if _, err := AddrPortFromSockaddr(nil, 16); err == nil {
		t.Error("AddrPortFromSockaddr(nil, 16): no error")
	}
	if _, err := SockaddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:1"), nil); err == nil {
		t.Error("SockaddrFromAddrPort(ap, nil): no error")
	}
}

// A zero Ring (not from New) is refused as a closed one: it dereferenced
// its nil queues, and its Close would have closed descriptor 0.
func TestZeroRingIsRefused(t *testing.T) {
	var r Ring
	if _, err := r.Submit(); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit on a zero Ring: %v, want ErrClosed", err)
	}
	if sqe := r.GetSQE(); sqe != nil {
		t.Error("GetSQE on a zero Ring returned an entry")
	}
	if p, h := r.CQPending(); p != 0 || h {
		t.Errorf("CQPending on a zero Ring = %d, %v", p, h)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close of a zero Ring: %v", err)
	}
}

// A wait on an IOPOLL ring with nothing in flight backs off instead of
// going round at 100% CPU: the kernel does not sleep on such a ring, and
// returns at once with nothing on its poll list (it used 1 s of CPU in 1 s).
func TestIOPollWaitWithNothingInFlightDoesNotSpin(t *testing.T) {
	needRing(t)
	if os.Getenv("URING_IOPOLL_CHILD") != "" {
		r, err := New(4, &Params{Flags: SetupIOPoll})
		if err != nil {
			os.Exit(3)
		}
		r.SubmitAndWait(1)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestIOPollWaitWithNothingInFlightDoesNotSpin$")
	cmd.Env = append(os.Environ(), "URING_IOPOLL_CHILD=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	cmd.Process.Kill()
	cmd.Wait()
	if cmd.ProcessState.ExitCode() == 3 {
		t.Skip("no IOPOLL ring here")
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()); cpu > 500*time.Millisecond {
		t.Errorf("SubmitAndWait(1) on an idle IOPOLL ring used %v of CPU in 1 s", cpu)
	}
}
