package channel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// The tests below let a wait's deadline pass while its worker runs another
// task that never suspends. With pinned workers the waiting task cannot run
// elsewhere, so its node stays queued long after the deadline; a peer that
// comes then must not complete it.

// newPinnedRuntime is newRuntime with pinned workers.
func newPinnedRuntime(t *testing.T, workers int) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(runtime.Config{Workers: workers, PinnedWorkers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// spinFor occupies the worker of the task that runs it for d, never suspending.
func spinFor(d time.Duration) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
		return 0, nil
	}
}

func TestRecvTimedOutOnABusyWorkerTakesNoLateValue(t *testing.T) {
	rt := newPinnedRuntime(t, 2)
	tx, rx := New[int](0)
	const deadline = 10 * time.Millisecond
	const busy = 300 * time.Millisecond
	type result struct {
		v   int
		err error
	}
	live := make(chan result, 1)
	sent := make(chan error, 1)
	go func() { // a receiver that still waits, queued behind the timed-out one
		time.Sleep(3 * deadline)
		ctx, cancel := context.WithTimeout(context.Background(), busy)
		defer cancel()
		v, err := rx.Recv(ctx)
		live <- result{v, err}
	}()
	go func() { // a sender that comes well after the deadline
		time.Sleep(6 * deadline)
		ctx, cancel := context.WithTimeout(context.Background(), busy/2)
		defer cancel()
		sent <- tx.Send(ctx, 42)
	}()
	var recvErr error
	var took time.Duration
	_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		// Spawned first, so pinned placement starts it on this worker
		// once the receive below waits.
		hog := runtime.Spawn(ctx, spinFor(busy))
		rctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		start := time.Now()
		_, recvErr = rx.Recv(rctx)
		took = time.Since(start)
		_, err := hog.Join(ctx)
		return 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
	got, serr := <-live, <-sent
	if !errors.Is(recvErr, context.DeadlineExceeded) {
		t.Errorf("Recv with a %v deadline returned %v after %v: it took a value sent after its deadline", deadline, recvErr, took)
	}
	if serr != nil || got.err != nil || got.v != 42 {
		t.Errorf("the send after the deadline: %v; the receiver still waiting got %d, %v; want 42 delivered to it", serr, got.v, got.err)
	}
}

func TestSelectTimedOutOnABusyWorkerTakesNoLateValue(t *testing.T) {
	rt := newPinnedRuntime(t, 2)
	tx, rx := New[int](0)
	_, other := New[int](0)
	const deadline = 10 * time.Millisecond
	const busy = 300 * time.Millisecond
	sent := make(chan error, 1)
	go func() {
		time.Sleep(6 * deadline)
		ctx, cancel := context.WithTimeout(context.Background(), busy/2)
		defer cancel()
		sent <- tx.Send(ctx, 42)
	}()
	var k int
	var selErr error
	_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		hog := runtime.Spawn(ctx, spinFor(busy))
		sctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		var v, w int
		k, selErr = Select(sctx, rx.RecvCase(&v), other.RecvCase(&w))
		_, err := hog.Join(ctx)
		return 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
	serr := <-sent
	if k != -1 || !errors.Is(selErr, context.DeadlineExceeded) {
		t.Errorf("Select with a %v deadline = %d, %v: it took a value sent after its deadline", deadline, k, selErr)
	}
	if !errors.Is(serr, context.DeadlineExceeded) {
		t.Errorf("the send after the deadline, with nobody receiving = %v, want its own deadline", serr)
	}
}
