package sync

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

func TestSemaphoreWeights(t *testing.T) {
	ctx := context.Background()
	s := NewSemaphore(10)
	for _, n := range []int64{3, 3, 4} {
		if err := s.Acquire(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if s.TryAcquire(1) {
		t.Fatal("TryAcquire on a full semaphore")
	}
	if !s.TryAcquire(0) {
		t.Fatal("TryAcquire(0) with nobody waiting")
	}
	s.Release(4)
	if s.TryAcquire(5) {
		t.Fatal("TryAcquire(5) with 4 free")
	}
	if !s.TryAcquire(4) {
		t.Fatal("TryAcquire(4) with 4 free")
	}
	s.Release(10)
	if s.free() != 10 {
		t.Fatalf("free = %d, want 10", s.free())
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Acquire(done, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a done ctx = %v", err)
	}
	if s.free() != 10 {
		t.Fatal("a failed Acquire took permits")
	}
}

func TestSemaphoreMisusePanics(t *testing.T) {
	for name, f := range map[string]func(){
		"faio/sync: semaphore size out of range":         func() { NewSemaphore(-1) },
		"faio/sync: semaphore weight < 0":                func() { NewSemaphore(1).Release(-1) },
		"faio/sync: semaphore released more than held":   func() { NewSemaphore(1).Release(1) },
		"faio/sync: semaphore weight < 0 (TryAcquire)":   func() { NewSemaphore(1).TryAcquire(-1) },
		"faio/sync: semaphore weight < 0 (Acquire)":      func() { _ = NewSemaphore(1).Acquire(context.Background(), -1) },
		"faio/sync: semaphore released more than held 2": func() { s := NewSemaphore(2); s.TryAcquire(1); s.Release(2) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r, _ := recover().(string)
				if r == "" || len(name) < len(r) || name[:len(r)] != r {
					t.Fatalf("recovered %q", r)
				}
			}()
			f()
		})
	}
}

// Waiters queued in a known order with various weights are served in that
// order: a large request at the head holds up smaller ones behind it.
func TestSemaphoreFIFO(t *testing.T) {
	weights := []int64{5, 1, 2, 4, 1, 3}
	rt := newRuntime(t, 2)
	s := NewSemaphore(5)
	var order []int
	var omu gosync.Mutex
	run(t, rt, func(ctx context.Context) error {
		if err := s.Acquire(ctx, 5); err != nil {
			return err
		}
		var gs goGroup
		var hs []*runtime.JoinHandle[struct{}]
		for i, w := range weights {
			acquire := func(ctx context.Context) (struct{}, error) {
				if err := s.Acquire(ctx, w); err != nil {
					return struct{}{}, err
				}
				omu.Lock()
				order = append(order, i)
				omu.Unlock()
				return struct{}{}, nil
			}
			if i%2 == 0 {
				hs = append(hs, runtime.Spawn(ctx, acquire))
			} else {
				gs.Go(func() error { _, err := acquire(context.Background()); return err })
			}
			waitUntil(ctx, func() bool { return s.queued() == i+1 })
		}
		granted := func() int { omu.Lock(); defer omu.Unlock(); return len(order) }
		// Each step frees just enough for the next waiter in line.
		steps := []struct {
			release int64
			granted int
		}{
			{4, 0}, // the head wants 5: nobody goes
			{1, 1}, // 0 (5)
			{1, 2}, // 1 (1)
			{2, 3}, // 2 (2)
			{3, 3}, // 3 wants 4: 4 (1) fits in the 3 free but must not overtake
			{1, 4}, // 3 (4)
			{1, 5}, // 4 (1)
			{3, 6}, // 5 (3)
		}
		for _, st := range steps {
			s.Release(st.release)
			waitUntil(ctx, func() bool { return granted() == st.granted })
			if q := s.queued(); q != len(weights)-st.granted {
				return fmt.Errorf("after releasing %d: %d queued, want %d", st.release, q, len(weights)-st.granted)
			}
		}
		for _, h := range hs {
			if _, err := h.Join(ctx); err != nil {
				return err
			}
		}
		return gs.Wait(ctx)
	})
	for i, v := range order {
		if v != i {
			t.Fatalf("grant order %v, want 0..%d", order, len(weights)-1)
		}
	}
	if s.free() != 0 || s.queued() != 0 {
		t.Fatalf("free %d, queued %d at the end", s.free(), s.queued())
	}
}

// A request larger than the semaphore fails at once with
// ErrTooManyPermits, from a task and from a goroutine, whatever its ctx
// (it waited for ctx, for good with one that never ends: found by a
// reviewer); a cancelled head lets the smaller waiters behind it through;
// neither changes the permits.
func TestSemaphoreCancel(t *testing.T) {
	rt := newRuntime(t, 2)
	s := NewSemaphore(4)
	run(t, rt, func(ctx context.Context) error {
		if err := s.Acquire(ctx, 5); !errors.Is(err, ErrTooManyPermits) {
			return errors.Join(errors.New("oversized Acquire"), err)
		}
		if err := s.Acquire(context.Background(), 5); !errors.Is(err, ErrTooManyPermits) {
			return errors.Join(errors.New("oversized Acquire, ctx Background"), err)
		}
		if err := new(Semaphore).Acquire(context.Background(), 1); !errors.Is(err, ErrTooManyPermits) {
			return errors.Join(errors.New("Acquire(1) of a zero Semaphore"), err)
		}
		if !s.TryAcquire(3) {
			return errors.New("an oversized request held up TryAcquire")
		}
		hctx, cancelHead := context.WithCancel(ctx)
		head := runtime.Spawn(hctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, s.Acquire(ctx, 4)
		})
		waitUntil(ctx, func() bool { return s.queued() == 1 })
		small := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, s.Acquire(ctx, 1)
		})
		waitUntil(ctx, func() bool { return s.queued() == 2 })
		cancelHead()
		if _, err := head.Join(ctx); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("cancelled head"), err)
		}
		if _, err := small.Join(ctx); err != nil {
			return err
		}
		s.Release(4)
		if s.free() != 4 || s.queued() != 0 || s.state.Load()&semQueued != 0 {
			return errors.New("permits or queue wrong after the cancellations")
		}
		return nil
	})
}

// Tasks and goroutines acquire random weights with random deadlines: the
// permits held never exceed the size, and all of them come back.
func TestSemaphoreStress(t *testing.T) {
	const size = 10
	tasks, goroutines, rounds := 64, 8, 100
	if raceEnabled {
		rounds = 30
	}
	rt := newRuntime(t, 2)
	s := NewSemaphore(size)
	var held atomic.Int64
	var timedOut atomic.Int64
	worker := func(ctx context.Context, i int) error {
		rng := rand.New(rand.NewPCG(uint64(i), 5))
		for range rounds {
			n := int64(1 + rng.IntN(size))
			cctx, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(400))*time.Microsecond)
			err := s.Acquire(cctx, n)
			cancel()
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
					return err
				}
				timedOut.Add(1)
				continue
			}
			if h := held.Add(n); h > size {
				return errors.New("more permits held than the size")
			}
			if rng.IntN(16) == 0 {
				err = runtime.Sleep(ctx, 10*time.Microsecond)
			} else {
				err = runtime.Yield(ctx)
			}
			held.Add(-n)
			s.Release(n)
			if err != nil {
				return err
			}
		}
		return nil
	}
	var wg gosync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() { errs <- worker(context.Background(), tasks+g) })
	}
	run(t, rt, func(ctx context.Context) error { return spawnN(ctx, tasks, worker) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d timed out", timedOut.Load())
	if timedOut.Load() == 0 {
		t.Fatal("nothing timed out: the stress did not exercise cancellation")
	}
	if s.free() != size || s.queued() != 0 || s.state.Load()&semQueued != 0 {
		t.Fatalf("free %d, queued %d, state %#x at the end", s.free(), s.queued(), s.state.Load())
	}
}

// A Release so large that free+n overflows panics like any release of
// more than is held, and leaves the permits as they were, on the fast path
// and with waiters queued (found by a reviewer: Release(MaxInt64) on a
// full semaphore took its permit instead).
func TestSemaphoreHugeReleasePanics(t *testing.T) {
	mustPanic := func(f func()) {
		t.Helper()
		defer func() {
			if r, _ := recover().(string); r != "faio/sync: semaphore released more than held" {
				t.Errorf("recovered %q", r)
			}
		}()
		f()
	}
	s := NewSemaphore(1)
	mustPanic(func() { s.Release(math.MaxInt64) })
	if s.free() != 1 || !s.TryAcquire(1) {
		t.Fatalf("fast path: %d free after the panic, want 1", s.free())
	}

	// Now held, with a waiter queued: Release takes the locked path.
	got := make(chan error, 1)
	go func() { got <- s.Acquire(context.Background(), 1) }()
	for s.state.Load()&semQueued == 0 {
		time.Sleep(time.Millisecond)
	}
	mustPanic(func() { s.Release(math.MaxInt64) })
	s.Release(1)
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	if s.free() != 0 {
		t.Fatalf("queued path: %d free, want 0 (the waiter holds the permit)", s.free())
	}
}
