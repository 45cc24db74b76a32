package sync

import (
	"context"
	"errors"
	gosync "sync"
	"sync/atomic"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
)

// Waiters that started waiting in a known order, tasks and goroutines
// alternating, are woken by Signal in that order.
func TestCondSignalFIFO(t *testing.T) {
	const n = 12
	rt := newRuntime(t, 2)
	var mu Mutex
	var c Cond
	var order []int
	var woken atomic.Int32
	run(t, rt, func(ctx context.Context) error {
		var gs goGroup
		var hs []*runtime.JoinHandle[struct{}]
		for i := range n {
			wait := func(ctx context.Context) (struct{}, error) {
				if err := mu.Lock(ctx); err != nil {
					return struct{}{}, err
				}
				defer mu.Unlock()
				if err := c.Wait(ctx, &mu, nil); err != nil {
					return struct{}{}, err
				}
				order = append(order, i)
				woken.Add(1)
				return struct{}{}, nil
			}
			if i%2 == 0 {
				hs = append(hs, runtime.Spawn(ctx, wait))
			} else {
				gs.Go(func() error { _, err := wait(context.Background()); return err })
			}
			waitUntil(ctx, func() bool { return c.n.Load() == int32(i+1) })
		}
		for i := range n {
			c.Signal()
			waitUntil(ctx, func() bool { return woken.Load() == int32(i+1) })
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
			t.Fatalf("wake order %v, want 0..%d", order, n-1)
		}
	}
}

func TestCondBroadcast(t *testing.T) {
	const n = 16
	rt := newRuntime(t, 2)
	var mu Mutex
	var c Cond
	ready := false
	passed := 0
	run(t, rt, func(ctx context.Context) error {
		var gs goGroup
		waiter := func(ctx context.Context) error {
			if err := mu.Lock(ctx); err != nil {
				return err
			}
			defer mu.Unlock()
			if err := c.Wait(ctx, &mu, func() bool { return ready }); err != nil {
				return err
			}
			passed++
			return nil
		}
		h := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, spawnN(ctx, n/2, func(ctx context.Context, _ int) error { return waiter(ctx) })
		})
		for range n / 2 {
			gs.Go(func() error { return waiter(context.Background()) })
		}
		waitUntil(ctx, func() bool { return c.n.Load() == n })
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		ready = true
		c.Broadcast()
		mu.Unlock()
		if err := gs.Wait(ctx); err != nil {
			return err
		}
		_, err := h.Join(ctx)
		return err
	})
	if passed != n {
		t.Fatalf("%d waiters passed, want %d", passed, n)
	}
}

// Wait returns ctx.Err() with the mutex held when cancelled, both before
// and while waiting; the cancelled waiter is no longer queued.
func TestCondWaitCancelHoldsMutex(t *testing.T) {
	rt := newRuntime(t, 2)
	var mu Mutex
	var c Cond
	never := func() bool { return false }
	run(t, rt, func(ctx context.Context) error {
		done, cancel := context.WithCancel(ctx)
		cancel()
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		if err := c.Wait(done, &mu, never); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("Wait with a done ctx"), err)
		}
		if mu.TryLock() {
			return errors.New("mutex not held after a failed Wait")
		}
		mu.Unlock()

		for _, viaTask := range []bool{true, false} {
			wctx, cancel := context.WithCancel(ctx)
			var result Promise[error]
			wait := func(ctx context.Context) {
				if err := mu.Lock(ctx); err != nil {
					_ = result.Set(err)
					return
				}
				err := c.Wait(ctx, &mu, never)
				if mu.TryLock() {
					err = errors.New("mutex not held after a cancelled Wait")
				}
				mu.Unlock()
				_ = result.Set(err)
			}
			if viaTask {
				runtime.Spawn(wctx, func(ctx context.Context) (struct{}, error) {
					wait(ctx)
					return struct{}{}, nil
				})
			} else {
				go wait(wctx)
			}
			waitUntil(ctx, func() bool { return c.n.Load() == 1 })
			cancel()
			if err, _ := result.Wait(ctx); !errors.Is(err, context.Canceled) {
				return errors.Join(errors.New("cancelled Wait"), err)
			}
			if c.n.Load() != 0 || c.waiters.len != 0 {
				return errors.New("cancelled waiter still queued")
			}
		}
		return nil
	})
}

// A Signal reaches a live waiter even when an earlier waiter gave up.
func TestCondSignalAfterCancelledWaiter(t *testing.T) {
	rt := newRuntime(t, 2)
	var mu Mutex
	var c Cond
	run(t, rt, func(ctx context.Context) error {
		flag := false
		cctx, cancel := context.WithCancel(ctx)
		first := runtime.Spawn(cctx, func(ctx context.Context) (struct{}, error) {
			if err := mu.Lock(ctx); err != nil {
				return struct{}{}, err
			}
			defer mu.Unlock()
			return struct{}{}, c.Wait(ctx, &mu, func() bool { return flag })
		})
		waitUntil(ctx, func() bool { return c.n.Load() == 1 })
		second := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			if err := mu.Lock(ctx); err != nil {
				return struct{}{}, err
			}
			defer mu.Unlock()
			return struct{}{}, c.Wait(ctx, &mu, func() bool { return flag })
		})
		waitUntil(ctx, func() bool { return c.n.Load() == 2 })
		cancel()
		if _, err := first.Join(ctx); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("first waiter"), err)
		}
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		flag = true
		c.Signal()
		mu.Unlock()
		_, err := second.Join(ctx)
		return err
	})
}

// A bounded buffer with two Conds, producers and consumers mixing tasks
// and goroutines: every item is received exactly once.
func TestCondProducerConsumer(t *testing.T) {
	producers, items := 8, 2000
	if raceEnabled {
		items = 300
	}
	const capacity = 4
	rt := newRuntime(t, 2)
	var mu Mutex
	var notEmpty, notFull Cond
	var buf []int
	seen := make([]int, producers*items)
	consumed := 0
	produce := func(ctx context.Context, p int) error {
		for i := range items {
			if err := mu.Lock(ctx); err != nil {
				return err
			}
			if err := notFull.Wait(ctx, &mu, func() bool { return len(buf) < capacity }); err != nil {
				mu.Unlock()
				return err
			}
			buf = append(buf, p*items+i)
			notEmpty.Signal()
			mu.Unlock()
		}
		return nil
	}
	consume := func(ctx context.Context) error {
		for {
			if err := mu.Lock(ctx); err != nil {
				return err
			}
			if err := notEmpty.Wait(ctx, &mu, func() bool { return len(buf) > 0 || consumed == producers*items }); err != nil {
				mu.Unlock()
				return err
			}
			if len(buf) == 0 {
				mu.Unlock()
				return nil
			}
			v := buf[0]
			buf = buf[1:]
			seen[v]++
			consumed++
			if consumed == producers*items {
				notEmpty.Broadcast()
			}
			notFull.Signal()
			mu.Unlock()
		}
	}
	var wg gosync.WaitGroup
	errs := make(chan error, producers/2+2)
	for p := range producers / 2 {
		wg.Go(func() { errs <- produce(context.Background(), p) })
	}
	for range 2 {
		wg.Go(func() { errs <- consume(context.Background()) })
	}
	run(t, rt, func(ctx context.Context) error {
		return spawnN(ctx, producers/2+2, func(ctx context.Context, i int) error {
			if i < producers/2 {
				return produce(ctx, producers/2+i)
			}
			return consume(ctx)
		})
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("item %d received %d times", v, n)
		}
	}
}

// Cond.Wait with an unlocked Mutex panics on the caller's goroutine, so a
// task's misuse fails that task (*PanicError) instead of panicking on its
// worker, which ended the whole process (found by a reviewer).
func TestCondWaitWithAnUnlockedMutexFailsTheTask(t *testing.T) {
	rt := newRuntime(t, 2)
	var c Cond
	var m Mutex
	_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		return 0, c.Wait(ctx, &m, nil)
	})
	var pe *runtime.PanicError
	if !errors.As(err, &pe) || pe.Value != "faio/sync: Cond.Wait with an unlocked mutex" {
		t.Fatalf("BlockOn = %v, want the task's panic", err)
	}
	// From a plain goroutine: an ordinary panic.
	func() {
		defer func() {
			if r := recover(); r != "faio/sync: Cond.Wait with an unlocked mutex" {
				t.Errorf("goroutine: recovered %v", r)
			}
		}()
		_ = c.Wait(context.Background(), &m, nil)
	}()
	// With a predicate that holds, too, before pred reads what m
	// guards: Wait returned nil with m unlocked, and its caller then
	// unlocked m (found by a reviewer).
	func() {
		called := false
		defer func() {
			if r := recover(); r != "faio/sync: Cond.Wait with an unlocked mutex" || called {
				t.Errorf("true pred: recovered %v, pred called %v", r, called)
			}
		}()
		_ = c.Wait(context.Background(), &m, func() bool { called = true; return true })
	}()
	// The runtime and the Cond work on.
	if _, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		if err := m.Lock(ctx); err != nil {
			return 0, err
		}
		defer m.Unlock()
		ready := true
		return 0, c.Wait(ctx, &m, func() bool { return ready })
	}); err != nil {
		t.Fatal(err)
	}
}

// A nil mutex is named in Wait's panic, whether or not pred holds, rather
// than dereferenced (a bare nil-pointer fault, and only once Wait had to
// wait).
func TestCondWaitWithANilMutexPanics(t *testing.T) {
	const want = "faio/sync: Cond.Wait with a nil mutex"
	var c Cond
	for _, pred := range []func() bool{nil, func() bool { return true }, func() bool { return false }} {
		func() {
			defer func() {
				if r := recover(); r != want {
					t.Errorf("recovered %v, want %q", r, want)
				}
			}()
			_ = c.Wait(context.Background(), nil, pred)
		}()
	}
}
