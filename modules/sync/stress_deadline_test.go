package sync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// Stress: tasks and goroutines, with and without deadlines, plus a task that
// computes for 3 ms at a time, on pinned and unpinned runtimes: deadlines
// pass while waiters' workers are busy, so the primitives drop waiters whose
// wait ended before their tasks run (Waker.Ended). Invariants: exclusion, permit bound,
// every caller without a deadline is served, a failed call returns its
// context's error and not much later than its deadline, and the primitive
// is left free.

// stressDur is how long each configuration runs.
const stressDur = time.Second

type stressStats struct {
	ok, timeout atomic.Int64
	maxLate     atomic.Int64
	bad         atomic.Value
}

func (s *stressStats) fail(format string, a ...any) { s.bad.Store(fmt.Sprintf(format, a...)) }

func (s *stressStats) result(err error, dl time.Time, hasDL bool) {
	if err == nil {
		s.ok.Add(1)
		return
	}
	if !hasDL || !errors.Is(err, context.DeadlineExceeded) {
		s.fail("unexpected error %v (deadline %v)", err, hasDL)
		return
	}
	s.timeout.Add(1)
	late := time.Since(dl)
	for {
		m := s.maxLate.Load()
		if int64(late) <= m || s.maxLate.CompareAndSwap(m, int64(late)) {
			break
		}
	}
}

func stressCtx(parent context.Context, r *rand.Rand) (context.Context, context.CancelFunc, time.Time, bool) {
	if r.IntN(3) == 0 {
		ctx, cancel := context.WithCancel(parent)
		return ctx, cancel, time.Time{}, false
	}
	d := time.Duration(50+r.IntN(3000)) * time.Microsecond
	dl := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(parent, dl)
	return ctx, cancel, dl, true
}

// compute occupies its goroutine for d without suspending.
func compute(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// stressRun runs op from tasks and goroutines until stressDur passes.
func stressRun(t *testing.T, pinned bool, op func(ctx context.Context, r *rand.Rand, st *stressStats)) *stressStats {
	rt, err := runtime.New(runtime.Config{Workers: 2, PinnedWorkers: pinned})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	st := new(stressStats)
	stop := time.Now().Add(stressDur)
	var wg WaitGroup
	const tasks, gors = 24, 4
	wg.Add(tasks + gors + 1)
	for i := range tasks {
		runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 1))
			for time.Now().Before(stop) {
				op(ctx, r, st)
			}
			return 0, nil
		})
	}
	// A hog: a task that computes for a few ms at a time without suspending.
	runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
		defer wg.Done()
		for time.Now().Before(stop) {
			compute(3 * time.Millisecond)
			_ = runtime.Sleep(ctx, time.Millisecond)
		}
		return 0, nil
	})
	for i := range gors {
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 2))
			for time.Now().Before(stop) {
				op(context.Background(), r, st)
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), stressDur+20*time.Second)
	defer cancel()
	if err := wg.Wait(ctx); err != nil {
		t.Fatalf("not every caller finished: %v", err)
	}
	if b := st.bad.Load(); b != nil {
		t.Fatal(b)
	}
	t.Logf("pinned=%v ok=%d timeouts=%d maxLate=%v", pinned, st.ok.Load(), st.timeout.Load(), time.Duration(st.maxLate.Load()))
	if late := time.Duration(st.maxLate.Load()); late > time.Second {
		t.Errorf("a failed call returned %v after its deadline", late)
	}
	return st
}

func forPinned(t *testing.T, f func(t *testing.T, pinned bool)) {
	for _, p := range []bool{false, true} {
		t.Run(fmt.Sprintf("pinned=%v", p), func(t *testing.T) { f(t, p) })
	}
}

func TestStressMutexWithDeadlines(t *testing.T) {
	forPinned(t, func(t *testing.T, pinned bool) {
		var mu Mutex
		var inside atomic.Int32
		counter := 0 // guarded by mu: the race detector checks hand-offs
		stressRun(t, pinned, func(ctx context.Context, r *rand.Rand, st *stressStats) {
			if r.IntN(8) == 0 {
				if mu.TryLock() {
					counter++
					mu.Unlock()
				}
				return
			}
			c, cancel, dl, has := stressCtx(ctx, r)
			err := mu.Lock(c)
			cancel()
			st.result(err, dl, has)
			if err != nil {
				return
			}
			if inside.Add(1) != 1 {
				st.fail("two holders")
			}
			counter++
			if r.IntN(4) == 0 && runtime.InTask(ctx) {
				_ = runtime.Yield(ctx)
			}
			inside.Add(-1)
			if r.IntN(2) == 0 {
				mu.Unlock()
			} else { // unlocked by another goroutine
				done := make(chan struct{})
				go func() { mu.Unlock(); close(done) }()
				if runtime.InTask(ctx) {
					ev := new(Event)
					go func() { <-done; ev.Set() }()
					_ = ev.Wait(context.WithoutCancel(ctx))
				} else {
					<-done
				}
			}
		})
		if !mu.TryLock() {
			t.Fatal("mutex held after the run")
		}
	})
}

func TestStressSemaphoreWithDeadlines(t *testing.T) {
	forPinned(t, func(t *testing.T, pinned bool) {
		const size = 5
		sem := NewSemaphore(size)
		var inside atomic.Int64
		stressRun(t, pinned, func(ctx context.Context, r *rand.Rand, st *stressStats) {
			n := int64(1 + r.IntN(size))
			if r.IntN(8) == 0 {
				if sem.TryAcquire(n) {
					if inside.Add(n) > size {
						st.fail("permits exceeded")
					}
					inside.Add(-n)
					sem.Release(n)
				}
				return
			}
			c, cancel, dl, has := stressCtx(ctx, r)
			err := sem.Acquire(c, n)
			cancel()
			st.result(err, dl, has)
			if err != nil {
				return
			}
			if v := inside.Add(n); v > size {
				st.fail("permits exceeded: %d", v)
			}
			if r.IntN(4) == 0 && runtime.InTask(ctx) {
				_ = runtime.Yield(ctx)
			}
			inside.Add(-n)
			sem.Release(n)
		})
		if !sem.TryAcquire(size) {
			t.Fatalf("%d permits free after the run", sem.free())
		}
	})
}

func TestStressRWMutexWithDeadlines(t *testing.T) {
	forPinned(t, func(t *testing.T, pinned bool) {
		var rw RWMutex
		var readers, writers atomic.Int32
		shared := 0
		stressRun(t, pinned, func(ctx context.Context, r *rand.Rand, st *stressStats) {
			c, cancel, dl, has := stressCtx(ctx, r)
			defer cancel()
			if r.IntN(3) == 0 {
				var err error
				if r.IntN(8) == 0 {
					if !rw.TryLock() {
						return
					}
				} else {
					err = rw.Lock(c)
					st.result(err, dl, has)
				}
				if err != nil {
					return
				}
				if writers.Add(1) != 1 || readers.Load() != 0 {
					st.fail("writer not alone")
				}
				shared++
				if r.IntN(4) == 0 && runtime.InTask(ctx) {
					_ = runtime.Yield(ctx)
				}
				writers.Add(-1)
				rw.Unlock()
				return
			}
			var err error
			if r.IntN(8) == 0 {
				if !rw.TryRLock() {
					return
				}
			} else {
				err = rw.RLock(c)
				st.result(err, dl, has)
			}
			if err != nil {
				return
			}
			readers.Add(1)
			if writers.Load() != 0 {
				st.fail("reader with a writer")
			}
			_ = shared
			if r.IntN(4) == 0 && runtime.InTask(ctx) {
				_ = runtime.Yield(ctx)
			}
			readers.Add(-1)
			rw.RUnlock()
		})
		if !rw.TryLock() {
			t.Fatal("RWMutex held after the run")
		}
	})
}
