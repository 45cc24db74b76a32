package sync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"runtime/debug"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// 1,000 tasks x 1,000 increments, plus goroutines, under one Mutex: the
// counter must come out exact and no two holders may overlap.
func TestMutexMutualExclusion(t *testing.T) {
	mutualExclusion(t, 1000, 1000, 8)
}

// The same with the garbage collector marking all the time: the lock's
// fast paths swap the state word without a write barrier (see
// Mutex.stateWord), and the queued waiters' nodes, which go through the
// barrier, must survive every cycle.
func TestMutexUnderGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	stop := make(chan struct{})
	var gcs gosync.WaitGroup
	gcs.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				goruntime.GC()
			}
		}
	})
	stopGC := func() { close(stop); gcs.Wait() }
	defer func() {
		if stop != nil {
			stopGC() // after a t.Fatal
		}
	}()
	// Rounds go on until enough collections overlapped them: without the
	// race detector a round can take a few milliseconds, less than a
	// cycle on a busy machine, so a fixed count of rounds proves nothing.
	const wantGCs = 10
	start := numGC()
	deadline := time.Now().Add(time.Minute)
	rounds := 0
	for rounds < 10 || (numGC()-start < wantGCs && time.Now().Before(deadline)) {
		t.Run(fmt.Sprint(rounds), func(t *testing.T) { mutualExclusion(t, 300, 300, 4) })
		rounds++
	}
	n := numGC() - start
	stopGC()
	stop = nil
	if n < wantGCs {
		t.Errorf("only %d collections ran during %d rounds in a minute", n, rounds)
	}
}

// numGC returns how many collections have completed.
func numGC() uint32 {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.NumGC
}

func mutualExclusion(t *testing.T, tasks, iters, goroutines int) {
	rt := newRuntime(t, 2)
	var mu Mutex
	var inside atomic.Int32
	counter := 0
	section := func() error {
		if inside.Add(1) != 1 {
			return errors.New("two holders inside the critical section")
		}
		counter++
		inside.Add(-1)
		return nil
	}
	var wg gosync.WaitGroup
	errs := make(chan error, goroutines)
	for range goroutines {
		wg.Go(func() {
			ctx := context.Background()
			for range iters {
				if err := mu.Lock(ctx); err != nil {
					errs <- err
					return
				}
				err := section()
				mu.Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	run(t, rt, func(ctx context.Context) error {
		return spawnN(ctx, tasks, func(ctx context.Context, i int) error {
			for range iters {
				if err := mu.Lock(ctx); err != nil {
					return err
				}
				err := section()
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			return nil
		})
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if want := (tasks + goroutines) * iters; counter != want {
		t.Fatalf("counter = %d, want %d", counter, want)
	}
	if !mu.TryLock() {
		t.Fatal("mutex left locked")
	}
}

// Waiters that queued in a known order, tasks and goroutines alternating,
// get the lock in that order.
func TestMutexFIFO(t *testing.T) {
	const n = 20
	rt := newRuntime(t, 2)
	var mu Mutex
	var order []int
	run(t, rt, func(ctx context.Context) error {
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		var gs goGroup
		var hs []*runtime.JoinHandle[struct{}]
		for i := range n {
			acquire := func(ctx context.Context) (struct{}, error) {
				if err := mu.Lock(ctx); err != nil {
					return struct{}{}, err
				}
				order = append(order, i)
				mu.Unlock()
				return struct{}{}, nil
			}
			if i%2 == 0 {
				hs = append(hs, runtime.Spawn(ctx, acquire))
			} else {
				gs.Go(func() error { _, err := acquire(context.Background()); return err })
			}
			waitUntil(ctx, func() bool { return mu.queued() == i+1 })
		}
		mu.Unlock()
		for _, h := range hs {
			if _, err := h.Join(ctx); err != nil {
				return err
			}
		}
		return gs.Wait(ctx)
	})
	for i, v := range order {
		if v != i {
			t.Fatalf("acquisition order %v, want 0..%d", order, n-1)
		}
	}
	if len(order) != n {
		t.Fatalf("%d acquisitions, want %d", len(order), n)
	}
}

func TestMutexTryLock(t *testing.T) {
	var mu Mutex
	if !mu.TryLock() {
		t.Fatal("TryLock of a free mutex failed")
	}
	if mu.TryLock() {
		t.Fatal("TryLock of a held mutex succeeded")
	}
	mu.Unlock()
	if err := mu.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
}

func TestMutexUnlockOfUnlockedPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "faio/sync: unlock of unlocked mutex" {
			t.Fatalf("recovered %v", r)
		}
	}()
	var mu Mutex
	mu.Unlock()
}

func TestMutexDoneContext(t *testing.T) {
	var mu Mutex
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := mu.Lock(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled ctx = %v", err)
	}
	if !mu.TryLock() {
		t.Fatal("a failed Lock left the mutex locked")
	}
}

// A waiter whose ctx expires gives up; the holder's Unlock skips it and the
// next waiter gets the lock.
func TestMutexCancelledWaiterSkipped(t *testing.T) {
	rt := newRuntime(t, 2)
	var mu Mutex
	run(t, rt, func(ctx context.Context) error {
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		cctx, cancel := context.WithCancel(ctx)
		first := runtime.Spawn(cctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, mu.Lock(ctx)
		})
		waitUntil(ctx, func() bool { return mu.queued() == 1 })
		second := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			if err := mu.Lock(ctx); err != nil {
				return struct{}{}, err
			}
			mu.Unlock()
			return struct{}{}, nil
		})
		waitUntil(ctx, func() bool { return mu.queued() == 2 })
		cancel()
		if _, err := first.Join(ctx); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("cancelled waiter"), err)
		}
		mu.Unlock()
		if _, err := second.Join(ctx); err != nil {
			return err
		}
		if !mu.TryLock() {
			return errors.New("mutex left locked")
		}
		mu.Unlock()
		return nil
	})
}

// A waiter retrying with short timeouts while the lock is held for good
// does not pile up nodes: each new push pops the dead one below it.
func TestMutexRetryDoesNotPileUp(t *testing.T) {
	var mu Mutex
	mu.Lock(context.Background())
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Microsecond)
		if err := mu.Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock on a held mutex = %v", err)
		}
		cancel()
	}
	n := 0
	for s := mu.state.Load(); s != &mutexLocked; s = s.next.Load() {
		n++
	}
	if n > 1 {
		t.Fatalf("%d nodes queued after sequential retries, want at most 1", n)
	}
	mu.Unlock()
	if !mu.TryLock() {
		t.Fatal("mutex left locked")
	}
}

// cancelStorm hammers mu with waiters on random short deadlines, from
// tasks and goroutines, while holders keep it busy; it checks mutual
// exclusion and returns once every participant has returned.
func cancelStorm(t *testing.T, rt *runtime.Runtime, mu *Mutex) {
	tasks, rounds, goroutines := 200, 50, 8
	if raceEnabled {
		tasks, rounds = 100, 20
	}
	var inside atomic.Int32
	var acquired, failed atomic.Int64
	counter := 0
	attempt := func(ctx context.Context, rng *rand.Rand) error {
		d := time.Duration(rng.IntN(500)) * time.Microsecond
		cctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		if err := mu.Lock(cctx); err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			failed.Add(1)
			return nil
		}
		defer mu.Unlock()
		if inside.Add(1) != 1 {
			return errors.New("two holders inside the critical section")
		}
		counter++
		acquired.Add(1)
		// Hold it across a switch now and then, and rarely across a
		// timer (about a millisecond), so that waiters really queue
		// and time out.
		var err error
		switch rng.IntN(64) {
		case 0:
			err = runtime.Sleep(ctx, 10*time.Microsecond)
		case 1, 2, 3, 4, 5, 6, 7, 8:
			err = runtime.Yield(ctx)
		}
		if err != nil {
			inside.Add(-1)
			return err
		}
		inside.Add(-1)
		return nil
	}
	var wg gosync.WaitGroup
	errs := make(chan error, goroutines+1)
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range rounds {
				if err := attempt(context.Background(), rng); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	run(t, rt, func(ctx context.Context) error {
		return spawnN(ctx, tasks, func(ctx context.Context, i int) error {
			rng := rand.New(rand.NewPCG(uint64(i), 2))
			for range rounds {
				if err := attempt(ctx, rng); err != nil {
					return err
				}
			}
			return nil
		})
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if int64(counter) != acquired.Load() {
		t.Fatalf("counter %d, acquisitions %d", counter, acquired.Load())
	}
	if acquired.Load()+failed.Load() != int64((tasks+goroutines)*rounds) {
		t.Fatalf("%d acquired + %d failed, want %d attempts", acquired.Load(), failed.Load(), (tasks+goroutines)*rounds)
	}
	t.Logf("%d acquired, %d timed out", acquired.Load(), failed.Load())
	if failed.Load() == 0 {
		t.Fatal("no Lock timed out: the storm did not exercise cancellation")
	}
}

// After a cancellation storm the mutex is unlocked, nobody is queued, and
// it still works for tasks and goroutines.
func TestMutexCancelStorm(t *testing.T) {
	rt := newRuntime(t, 2)
	var mu Mutex
	cancelStorm(t, rt, &mu)
	if mu.state.Load() != nil {
		t.Fatal("mutex not unlocked after the storm")
	}
	if err := mu.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	run(t, rt, func(ctx context.Context) error {
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		mu.Unlock()
		return nil
	})
}

// Same storm; then a Lock must succeed within a generous bound (a waiter
// stranded with the lock would make it hang).
func TestTimingMutexCancelStorm(t *testing.T) {
	rt := newRuntime(t, 2)
	var mu Mutex
	cancelStorm(t, rt, &mu)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := mu.Lock(ctx); err != nil {
		t.Fatalf("Lock after the storm: %v", err)
	}
	mu.Unlock()
}

// Cancelling a task (JoinHandle.Cancel) that waits for the lock.
func TestMutexTaskCancel(t *testing.T) {
	rt := newRuntime(t, 1)
	var mu Mutex
	run(t, rt, func(ctx context.Context) error {
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		h := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, mu.Lock(ctx)
		})
		waitUntil(ctx, func() bool { return mu.queued() == 1 })
		h.Cancel()
		if _, err := h.Join(ctx); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("cancelled task's Lock"), err)
		}
		mu.Unlock()
		if mu.state.Load() != nil {
			return errors.New("mutex not unlocked")
		}
		return nil
	})
}

// Uncontended Lock+Unlock from a task allocates nothing.
func TestMutexUncontendedNoAlloc(t *testing.T) {
	rt := newRuntime(t, 1)
	var mu Mutex
	run(t, rt, func(ctx context.Context) error {
		allocs := testing.AllocsPerRun(1000, func() {
			if err := mu.Lock(ctx); err != nil {
				panic(err)
			}
			mu.Unlock()
		})
		if allocs != 0 {
			return errors.New("uncontended Lock+Unlock allocates")
		}
		return nil
	})
}

// Unlock yields its thread after handing the lock to a plain goroutine, so
// that the goroutine runs at once instead of after a preemption slice of
// the worker (holding the lock all that while). A waiter is a goroutine
// by what calls Lock, not by its context: a goroutine that locks with a
// task's context (one a task passed to it) is one, and a task that locks
// with context.Background() is not. Both used to be told by the context
// alone; at GOMAXPROCS=1, with another task keeping the worker busy, the
// goroutine's Lock then took up to 20 ms.
func TestMutexWaiterKindIsTheCallersNotTheContexts(t *testing.T) {
	rt := newRuntime(t, 1)
	var mu Mutex
	run(t, rt, func(ctx context.Context) error {
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		var gs goGroup
		gs.Go(func() error {
			if err := mu.Lock(ctx); err != nil {
				return err
			}
			mu.Unlock()
			return nil
		})
		waitUntil(ctx, func() bool { return mu.queued() == 1 })
		if !mu.state.Load().goroutine {
			return errors.New("a goroutine locking with a task's context is queued as a task")
		}
		h := runtime.Spawn(ctx, func(context.Context) (struct{}, error) {
			if err := mu.Lock(context.Background()); err != nil {
				return struct{}{}, err
			}
			mu.Unlock()
			return struct{}{}, nil
		})
		waitUntil(ctx, func() bool { return mu.queued() == 2 })
		if mu.state.Load().goroutine {
			return errors.New("a task locking with context.Background() is queued as a goroutine")
		}
		mu.Unlock()
		if _, err := h.Join(ctx); err != nil {
			return err
		}
		return gs.Wait(ctx)
	})
}
