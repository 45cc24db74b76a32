package sync

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// A waiter whose deadline passes while its pinned worker runs a task that
// never suspends must not hold up, or be counted by, anyone else.

func newPinned(t *testing.T, workers int) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(runtime.Config{Workers: workers, PinnedWorkers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func spinFor(d time.Duration) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
		return 0, nil
	}
}

const (
	busyDeadline = 10 * time.Millisecond
	busyFor      = 400 * time.Millisecond
	peerWait     = 200 * time.Millisecond
	// peerAt is when the peers come: well after busyDeadline, so that
	// the deadline's cancellation has landed even on a loaded machine,
	// and long before busyFor ends the timed-out waiter's wait.
	peerAt = 6 * busyDeadline
)

// timedOutOnBusyWorker runs wait (with a busyDeadline context) in a task whose
// pinned worker then runs a busyFor hog; it returns how long the call took
// and its error.
func timedOutOnBusyWorker(t *testing.T, wait func(ctx context.Context) error) (time.Duration, error) {
	rt := newPinned(t, 2)
	var werr error
	var took time.Duration
	_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		hog := runtime.Spawn(ctx, spinFor(busyFor))
		wctx, cancel := context.WithTimeout(ctx, busyDeadline)
		defer cancel()
		start := time.Now()
		werr = wait(wctx)
		took = time.Since(start)
		_, err := hog.Join(ctx)
		return 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return took, werr
}

// peerAfter runs f on a goroutine at peerAt with a peerWait timeout.
func peerAfter(f func(ctx context.Context) error) <-chan [2]any {
	out := make(chan [2]any, 1)
	go func() {
		time.Sleep(peerAt)
		ctx, cancel := context.WithTimeout(context.Background(), peerWait)
		defer cancel()
		start := time.Now()
		err := f(ctx)
		out <- [2]any{err, time.Since(start)}
	}()
	return out
}

func TestRWMutexTimedOutWriterOnABusyWorkerHoldsUpNoReader(t *testing.T) {
	var rw RWMutex
	if err := rw.RLock(context.Background()); err != nil { // a reader inside throughout
		t.Fatal(err)
	}
	reader := peerAfter(func(ctx context.Context) error {
		err := rw.RLock(ctx)
		if err == nil {
			rw.RUnlock()
		}
		return err
	})
	took, werr := timedOutOnBusyWorker(t, func(ctx context.Context) error {
		err := rw.Lock(ctx)
		if err == nil {
			rw.Unlock()
		}
		return err
	})
	r := <-reader
	if !errors.Is(werr, context.DeadlineExceeded) {
		t.Errorf("writer Lock: %v after %v", werr, took)
	}
	if r[0] != nil {
		t.Errorf("a reader arriving 50 ms after the only waiting writer timed out waited %v and got %v; want the read lock at once (the writer is gone)", r[1], r[0])
	}
}

func TestSemaphoreTimedOutHeadOnABusyWorkerHoldsUpNobody(t *testing.T) {
	sem := NewSemaphore(4)
	if err := sem.Acquire(context.Background(), 2); err != nil { // 2 of 4 held throughout
		t.Fatal(err)
	}
	small := peerAfter(func(ctx context.Context) error {
		err := sem.Acquire(ctx, 1)
		if err == nil {
			sem.Release(1)
		}
		return err
	})
	took, aerr := timedOutOnBusyWorker(t, func(ctx context.Context) error {
		err := sem.Acquire(ctx, 4)
		if err == nil {
			sem.Release(4)
		}
		return err
	})
	r := <-small
	if !errors.Is(aerr, context.DeadlineExceeded) {
		t.Errorf("Acquire(4): %v after %v", aerr, took)
	}
	if r[0] != nil {
		t.Errorf("Acquire(1) with 2 permits free, arriving 50 ms after the only waiter timed out, waited %v and got %v; want the permit at once", r[1], r[0])
	}
}

func TestBarrierDoesNotCountAPartyThatTimedOutOnABusyWorker(t *testing.T) {
	b := NewBarrier(2)
	other := peerAfter(func(ctx context.Context) error {
		_, err := b.Wait(ctx)
		return err
	})
	took, werr := timedOutOnBusyWorker(t, func(ctx context.Context) error {
		_, err := b.Wait(ctx)
		return err
	})
	r := <-other
	if !errors.Is(werr, context.DeadlineExceeded) {
		t.Errorf("Barrier.Wait with a %v deadline returned %v after %v: counted in a generation completed 50 ms after its deadline", busyDeadline, werr, took)
	}
	if r[0] == nil {
		t.Errorf("the second party, alone at the barrier, was released after %v: the generation counted a party whose deadline had passed", r[1])
	}
}

// Mutex and Cond skipped such a waiter already: their Wake fails, and the
// lock or signal goes to the next one.
func TestMutexTimedOutWaiterOnABusyWorkerIsSkipped(t *testing.T) {
	var mu Mutex
	if err := mu.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(peerAt + 2*busyDeadline); mu.Unlock() }()
	other := peerAfter(func(ctx context.Context) error {
		err := mu.Lock(ctx)
		if err == nil {
			mu.Unlock()
		}
		return err
	})
	took, werr := timedOutOnBusyWorker(t, func(ctx context.Context) error {
		err := mu.Lock(ctx)
		if err == nil {
			mu.Unlock()
		}
		return err
	})
	r := <-other
	if !errors.Is(werr, context.DeadlineExceeded) {
		t.Errorf("Lock: %v after %v", werr, took)
	}
	if r[0] != nil {
		t.Errorf("live waiter: %v after %v", r[0], r[1])
	}
}

func TestCondTimedOutWaiterOnABusyWorkerIsSkipped(t *testing.T) {
	var mu Mutex
	var c Cond
	go func() {
		time.Sleep(peerAt + 2*busyDeadline)
		c.Signal()
	}()
	other := peerAfter(func(ctx context.Context) error {
		_ = mu.Lock(context.Background())
		defer mu.Unlock()
		return c.Wait(ctx, &mu, nil)
	})
	took, werr := timedOutOnBusyWorker(t, func(ctx context.Context) error {
		_ = mu.Lock(context.Background())
		err := c.Wait(ctx, &mu, nil)
		mu.Unlock()
		return err
	})
	r := <-other
	if !errors.Is(werr, context.DeadlineExceeded) {
		t.Errorf("Cond.Wait: %v after %v", werr, took)
	}
	if r[0] != nil {
		t.Errorf("live waiter: %v after %v", r[0], r[1])
	}
}

func TestTryAcquireBehindATimedOutHead(t *testing.T) {
	sem := NewSemaphore(4)
	_ = sem.Acquire(context.Background(), 2)
	got := make(chan bool, 1)
	var diag string
	go func() {
		time.Sleep(peerAt)
		sem.mu.Lock()
		if h := sem.waiters.head; h != nil {
			diag = fmt.Sprintf("queued=%d free=%d headEnded=%v", sem.waiters.len, sem.free(), h.waker.Ended())
		} else {
			diag = fmt.Sprintf("queue empty free=%d", sem.free())
		}
		sem.mu.Unlock()
		got <- sem.TryAcquire(1)
	}()
	timedOutOnBusyWorker(t, func(ctx context.Context) error { return sem.Acquire(ctx, 4) })
	if !<-got {
		t.Errorf("TryAcquire(1) with 2 of 4 permits free and the only waiter timed out 50 ms before = false (%s)", diag)
	}
}

func TestTryRLockBehindATimedOutWriter(t *testing.T) {
	var rw RWMutex
	_ = rw.RLock(context.Background())
	got := make(chan bool, 1)
	go func() { time.Sleep(peerAt); got <- rw.TryRLock() }()
	timedOutOnBusyWorker(t, func(ctx context.Context) error { return rw.Lock(ctx) })
	if !<-got {
		t.Errorf("TryRLock with readers inside and the only writer timed out 50 ms before = false")
	}
}
