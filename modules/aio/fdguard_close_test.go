package aio

import (
	"context"
	"errors"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sys/unix"
)

// withSubmitClose stands in f for destroy's ring close for one test.
func withSubmitClose(t *testing.T, f func(context.Context, *runtime.Runtime, runtime.Op) (runtime.Result, error)) {
	t.Helper()
	old := submitClose
	submitClose = f
	t.Cleanup(func() { submitClose = old })
}

// An error from SubmitOn after the ring's close has run must not make
// destroy close the number again with close(2): by then the kernel may
// have given it to another file, which the second close would close. The
// stand-in runs the real close on the ring, lets a new descriptor take
// the freed number, and then fails; that descriptor must stay open, and
// Close must report the failure. Before the fix destroy fell back to
// close(2) on any error from SubmitOn and closed the newcomer.
func TestRingCloseFailingAfterItRanClosesNothingElse(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	if rt.Backend() != runtime.BackendIOUring {
		t.Skip("needs the io_uring backend: the portable one never submits the close to a ring")
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	var pipeStat unix.Stat_t
	if err := unix.Fstat(p[1], &pipeStat); err != nil {
		t.Fatal(err)
	}
	errAfter := errors.New("SubmitOn failed after the close ran (stand-in)")
	taker, ringRes := -1, int32(1)
	withSubmitClose(t, func(ctx context.Context, rt *runtime.Runtime, op runtime.Op) (runtime.Result, error) {
		res, err := runtime.SubmitOn(ctx, rt, op)
		if err != nil {
			return res, err
		}
		ringRes = res.Res
		// The lowest free number from the closed one on: that number,
		// unless somebody else took it first.
		taker, _ = unix.FcntlInt(uintptr(p[1]), unix.F_DUPFD_CLOEXEC, op.(*closeOp).fd)
		return res, errAfter
	})
	var fd int
	runTask(t, rt, func(ctx context.Context) error {
		var err error
		if fd, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
			return err
		}
		var g fdGuard
		g.init(rt, fd, false)
		if err := g.close(ctx); !errors.Is(err, errAfter) {
			t.Errorf("close = %v, want the submission's error (%v)", err, errAfter)
		}
		return nil
	})
	if ringRes != 0 {
		t.Fatalf("the ring's close returned %d, want 0", ringRes)
	}
	if taker < 0 {
		t.Fatal("no descriptor took the number over")
	}
	defer unix.Close(taker)
	if taker != fd {
		t.Skipf("another file took number %d before the test could (it got %d)", fd, taker)
	}
	var st unix.Stat_t
	if err := unix.Fstat(taker, &st); err != nil {
		t.Fatalf("the descriptor that took number %d over was closed by destroy's fallback: %v", fd, err)
	}
	if st.Dev != pipeStat.Dev || st.Ino != pipeStat.Ino {
		t.Fatalf("number %d no longer names the pipe that took it over", fd)
	}
}

// A close that SubmitOn refuses before it reaches a ring (no ring: the
// portable backend, a closed runtime) is made with close(2), exactly once:
// the descriptor is closed, and Close reports success.
func TestRingCloseRefusedFallsBackToClose(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	calls := 0
	withSubmitClose(t, func(ctx context.Context, rt *runtime.Runtime, op runtime.Op) (runtime.Result, error) {
		calls++
		return runtime.Result{}, runtime.ErrNoRing
	})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	runTask(t, rt, func(ctx context.Context) error {
		var g fdGuard
		g.init(rt, p[1], false)
		return g.close(ctx)
	})
	if calls != 1 {
		t.Fatalf("the ring close was tried %d times, want 1", calls)
	}
	// End of file on the read end: the only write end is closed (this
	// does not depend on what its number names now).
	var b [1]byte
	if n, err := unix.Read(p[0], b[:]); n != 0 || err != nil {
		t.Fatalf("read of the pipe = %d, %v; want end of file, the write end closed", n, err)
	}
}
