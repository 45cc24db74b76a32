package sync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// n readers, tasks and goroutines, hold the read lock at the same time:
// each waits at a barrier of n parties while holding it, which completes
// only if all of them are inside together.
func TestRWMutexReadersInParallel(t *testing.T) {
	const n = 16
	rt := newRuntime(t, 2)
	var rw RWMutex
	b := NewBarrier(n)
	reader := func(ctx context.Context) error {
		if err := rw.RLock(ctx); err != nil {
			return err
		}
		defer rw.RUnlock()
		_, err := b.Wait(ctx)
		return err
	}
	var wg gosync.WaitGroup
	errs := make(chan error, n/2)
	for range n / 2 {
		wg.Go(func() { errs <- reader(context.Background()) })
	}
	run(t, rt, func(ctx context.Context) error {
		return spawnN(ctx, n/2, func(ctx context.Context, _ int) error { return reader(ctx) })
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if rw.state.Load() != 0 {
		t.Fatalf("state %#x after all readers left", rw.state.Load())
	}
}

// Writers and readers, tasks and goroutines: a writer is alone inside, and
// readers never see a half-done write.
func TestRWMutexWriterExcludes(t *testing.T) {
	workers, iters := 16, 500
	if raceEnabled {
		iters = 100
	}
	rt := newRuntime(t, 2)
	var rw RWMutex
	var readers, writers atomic.Int32
	var a, b int
	check := func(ctx context.Context, i int) error {
		rng := rand.New(rand.NewPCG(uint64(i), 3))
		for range iters {
			if rng.IntN(4) == 0 {
				if err := rw.Lock(ctx); err != nil {
					return err
				}
				if writers.Add(1) != 1 || readers.Load() != 0 {
					return errors.New("writer not alone")
				}
				a++
				if rng.IntN(8) == 0 {
					_ = runtime.Yield(ctx)
				}
				b++
				writers.Add(-1)
				rw.Unlock()
				continue
			}
			if err := rw.RLock(ctx); err != nil {
				return err
			}
			readers.Add(1)
			if writers.Load() != 0 || a != b {
				return errors.New("reader saw a writer")
			}
			if rng.IntN(8) == 0 {
				_ = runtime.Yield(ctx)
			}
			readers.Add(-1)
			rw.RUnlock()
		}
		return nil
	}
	var wg gosync.WaitGroup
	errs := make(chan error, workers/2)
	for i := range workers / 2 {
		wg.Go(func() { errs <- check(context.Background(), i) })
	}
	run(t, rt, func(ctx context.Context) error {
		return spawnN(ctx, workers/2, func(ctx context.Context, i int) error { return check(ctx, workers+i) })
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if rw.state.Load() != 0 {
		t.Fatalf("state %#x at the end", rw.state.Load())
	}
}

// The policy step by step: a waiting writer stops new readers and gets the
// lock when the readers inside leave; when it unlocks, the readers that
// waited are admitted together, ahead of the next writer.
func TestRWMutexPolicy(t *testing.T) {
	rt := newRuntime(t, 2)
	var rw RWMutex
	run(t, rt, func(ctx context.Context) error {
		if err := rw.RLock(ctx); err != nil {
			return err
		}
		var w1Held atomic.Bool
		var release Event
		w1 := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			if err := rw.Lock(ctx); err != nil {
				return struct{}{}, err
			}
			w1Held.Store(true)
			err := release.Wait(ctx)
			rw.Unlock()
			return struct{}{}, err
		})
		waitUntil(ctx, func() bool { _, w := rw.queued(); return w == 1 })
		if rw.TryRLock() {
			return errors.New("a reader entered ahead of a waiting writer")
		}
		var readersIn atomic.Int32
		var gs goGroup
		for range 3 {
			gs.Go(func() error {
				if err := rw.RLock(context.Background()); err != nil {
					return err
				}
				readersIn.Add(1)
				return nil
			})
		}
		waitUntil(ctx, func() bool { r, _ := rw.queued(); return r == 3 })
		w2 := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			if err := rw.Lock(ctx); err != nil {
				return struct{}{}, err
			}
			if readersIn.Load() != 3 {
				return struct{}{}, errors.New("second writer ahead of the reader batch")
			}
			rw.Unlock()
			return struct{}{}, nil
		})
		waitUntil(ctx, func() bool { _, w := rw.queued(); return w == 2 })
		rw.RUnlock()
		waitUntil(ctx, w1Held.Load)
		if readersIn.Load() != 0 {
			return errors.New("readers inside with the writer")
		}
		release.Set()
		if _, err := w1.Join(ctx); err != nil {
			return err
		}
		if err := gs.Wait(ctx); err != nil {
			return err
		}
		if readersIn.Load() != 3 {
			return errors.New("reader batch not admitted")
		}
		if _, w := rw.queued(); w != 1 {
			return errors.New("second writer not waiting for the batch")
		}
		for range 3 {
			rw.RUnlock()
		}
		_, err := w2.Join(ctx)
		return err
	})
}

// A stream of overlapping readers never leaves the lock free, yet writers
// get in, again and again.
func TestRWMutexWriterNotStarved(t *testing.T) {
	const writes = 20
	rt := newRuntime(t, 2)
	var rw RWMutex
	var stop atomic.Bool
	var inside atomic.Int32
	run(t, rt, func(ctx context.Context) error {
		readers := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, spawnN(ctx, 8, func(ctx context.Context, _ int) error {
				for !stop.Load() {
					if err := rw.RLock(ctx); err != nil {
						return err
					}
					inside.Add(1)
					// Stay until another reader is in, so that
					// the readers alone would keep the lock
					// forever, or until new readers are refused:
					// only a waiting writer does that.
					for inside.Load() < 2 && !stop.Load() {
						if !rw.TryRLock() {
							break
						}
						rw.RUnlock()
						_ = runtime.Yield(ctx)
					}
					inside.Add(-1)
					rw.RUnlock()
				}
				return nil
			})
		})
		for range writes {
			if err := rw.Lock(ctx); err != nil {
				return err
			}
			rw.Unlock()
			_ = runtime.Yield(ctx)
		}
		stop.Store(true)
		_, err := readers.Join(ctx)
		return err
	})
}

// A queued writer that gives up lets the readers queued behind it in.
func TestRWMutexCancelledWriterUnblocksReaders(t *testing.T) {
	rt := newRuntime(t, 2)
	var rw RWMutex
	run(t, rt, func(ctx context.Context) error {
		if err := rw.RLock(ctx); err != nil {
			return err
		}
		wctx, cancel := context.WithCancel(ctx)
		w := runtime.Spawn(wctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, rw.Lock(ctx)
		})
		waitUntil(ctx, func() bool { _, w := rw.queued(); return w == 1 })
		r := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, rw.RLock(ctx)
		})
		waitUntil(ctx, func() bool { r, _ := rw.queued(); return r == 1 })
		cancel()
		if _, err := w.Join(ctx); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("cancelled writer"), err)
		}
		if _, err := r.Join(ctx); err != nil {
			return err
		}
		rw.RUnlock()
		rw.RUnlock()
		if rw.state.Load() != 0 {
			return errors.New("lock not free at the end")
		}
		return nil
	})
}

// Readers and writers with random short deadlines: afterwards the lock is
// free, nobody is queued and both modes still work.
func TestRWMutexCancelStorm(t *testing.T) {
	tasks, rounds := 64, 40
	if raceEnabled {
		rounds = 15
	}
	rt := newRuntime(t, 2)
	var rw RWMutex
	var writers, readers atomic.Int32
	var timedOut atomic.Int64
	run(t, rt, func(ctx context.Context) error {
		return spawnN(ctx, tasks, func(ctx context.Context, i int) error {
			rng := rand.New(rand.NewPCG(uint64(i), 4))
			for range rounds {
				cctx, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(300))*time.Microsecond)
				write := rng.IntN(3) == 0
				var err error
				if write {
					err = rw.Lock(cctx)
				} else {
					err = rw.RLock(cctx)
				}
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						return err
					}
					timedOut.Add(1)
					continue
				}
				if write {
					if writers.Add(1) != 1 || readers.Load() != 0 {
						return errors.New("writer not alone")
					}
				} else if readers.Add(1); writers.Load() != 0 {
					return errors.New("reader with a writer")
				}
				if rng.IntN(16) == 0 {
					err = runtime.Sleep(ctx, 10*time.Microsecond)
				} else {
					err = runtime.Yield(ctx)
				}
				if write {
					writers.Add(-1)
					rw.Unlock()
				} else {
					readers.Add(-1)
					rw.RUnlock()
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	})
	t.Logf("%d timed out", timedOut.Load())
	if timedOut.Load() == 0 {
		t.Fatal("nothing timed out: the storm did not exercise cancellation")
	}
	if s := rw.state.Load(); s != 0 {
		t.Fatalf("state %#x after the storm", s)
	}
	if r, w := rw.queued(); r != 0 || w != 0 {
		t.Fatalf("%d readers, %d writers still queued", r, w)
	}
	if !rw.TryLock() {
		t.Fatal("TryLock after the storm")
	}
	rw.Unlock()
	if !rw.TryRLock() {
		t.Fatal("TryRLock after the storm")
	}
	rw.RUnlock()
}

func TestRWMutexMisusePanics(t *testing.T) {
	for name, f := range map[string]func(*RWMutex){
		"faio/sync: RUnlock of unlocked RWMutex": func(rw *RWMutex) { rw.RUnlock() },
		"faio/sync: Unlock of unlocked RWMutex":  func(rw *RWMutex) { rw.Unlock() },
	} {
		t.Run(name, func(t *testing.T) {
			var rw RWMutex
			defer func() {
				if r := recover(); r != name {
					t.Fatalf("recovered %v", r)
				}
				if rw.state.Load() != 0 {
					t.Fatalf("state %#x after the panic", rw.state.Load())
				}
			}()
			f(&rw)
		})
	}
	var rw RWMutex
	if !rw.TryLock() {
		t.Fatal("TryLock on a free RWMutex failed")
	}
	if rw.TryLock() || rw.TryRLock() {
		t.Fatal("TryLock/TryRLock on a write-locked RWMutex succeeded")
	}
	rw.Unlock()
	for range 2 {
		if !rw.TryRLock() {
			t.Fatal("TryRLock on a read-locked RWMutex failed")
		}
	}
	if rw.TryLock() {
		t.Fatal("TryLock on a read-locked RWMutex succeeded")
	}
}

// RUnlock of an unlocked RWMutex panics without ever changing the state
// word. Formerly it decremented first and undid that before panicking:
// in between, the word read "writer, queued, every reader count bit set",
// and a Lock queueing then had its rwQueued wiped by the undo and hung on
// a free lock. A watcher reads the word while the misuse repeats: it must
// never see the reader count underflow. The window was a few instructions
// wide, so this is a race to catch it, bounded in time, with
// a writer locking and unlocking alongside (its Unlock would also have
// panicked if it read the word in the window).
func TestRWMutexRUnlockMisuseLeavesStateAlone(t *testing.T) {
	if goruntime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two Ps for the watcher to run alongside")
	}
	var rw RWMutex
	var stop atomic.Bool
	var underflows, misuses atomic.Int64
	var g goGroup
	g.Go(func() error { // watcher
		for !stop.Load() {
			if s := rw.state.Load(); s&rwReaderMask == rwReaderMask {
				underflows.Add(1)
			}
		}
		return nil
	})
	g.Go(func() (err error) { // writer
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("writer's Unlock panicked: %v", r)
			}
		}()
		for i := 0; !stop.Load(); i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := rw.Lock(ctx)
			cancel()
			if err != nil {
				return fmt.Errorf("Lock %d: %w (state %#x)", i, err, rw.state.Load())
			}
			rw.Unlock()
			goruntime.Gosched()
		}
		return nil
	})
	misuse := func() {
		defer func() {
			if r := recover(); r != "faio/sync: RUnlock of unlocked RWMutex" {
				t.Errorf("recovered %v", r)
			}
		}()
		rw.RUnlock()
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for underflows.Load() == 0 && time.Now().Before(deadline) {
		misuse()
		misuses.Add(1)
	}
	stop.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := underflows.Load(); n != 0 {
		t.Fatalf("the state word showed an underflowed reader count %d times during %d misuses", n, misuses.Load())
	}
	if s := rw.state.Load(); s != 0 {
		t.Fatalf("state %#x at the end", s)
	}
	t.Logf("%d misuses", misuses.Load())
}
