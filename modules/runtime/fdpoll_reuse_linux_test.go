package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FD.Wait's doc: "ErrFDClosed if Close was called before or during the
// wait, or the runtime closed". So for a plain goroutine's wait on a
// cancellable context that the runtime's Close does not cancel.
func TestFDWaitOfAGoroutineEndsAtRuntimeClose(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1, IOBackend: BackendPortable})
	a, _ := nonblockingPair(t)
	fa, err := rt.RegisterFD(a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	buf := make([]byte, 8)
	var n int
	var rerr error
	go func() { done <- fa.Wait(ctx, false, recvTry(a, buf, &n, &rerr)) }()
	time.Sleep(20 * time.Millisecond)
	rt.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrFDClosed) {
			t.Fatalf("goroutine wait (cancellable ctx) at runtime Close: %v, want ErrFDClosed per FD.Wait doc", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hang")
	}
}

// A descriptor closed before its FD.Close (a misuse the kernel answers by
// dropping the registration), whose number was reused and registered by
// another FD: the stale FD.Close unregistered the other's number, and the
// other's waits hung for good (found by a reviewer). It now leaves a
// number registered since alone.
func TestFDCloseAfterTheNumberWasReused(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1, IOBackend: BackendPortable})
	a, b := nonblockingPair(t)
	fa, err := rt.RegisterFD(a)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(a) // misuse: before fa.Close
	c, d := nonblockingPair(t)
	if c != a {
		t.Skipf("number not reused (%d vs %d)", c, a)
	}
	_ = b
	fc, err := rt.RegisterFD(c)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	fa.Close()
	go func() { time.Sleep(50 * time.Millisecond); unix.Write(d, []byte("x")) }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	buf := make([]byte, 8)
	var n int
	var rerr error
	if err := fc.Wait(ctx, false, recvTry(c, buf, &n, &rerr)); err != nil {
		t.Fatalf("wait on the new FD after a stale Close of its number: %v", err)
	}
}
