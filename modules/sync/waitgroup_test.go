package sync

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

func TestWaitGroup(t *testing.T) {
	const n = 50
	rt := newRuntime(t, 2)
	var wg WaitGroup
	var done atomic.Int32
	run(t, rt, func(ctx context.Context) error {
		if err := wg.Wait(ctx); err != nil {
			return err
		}
		wg.Add(2 * n)
		for range n {
			runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				defer wg.Done()
				done.Add(1)
				return struct{}{}, runtime.Yield(ctx)
			})
			go func() {
				defer wg.Done()
				done.Add(1)
			}()
		}
		// Waiters of both kinds.
		var gs goGroup
		gs.Go(func() error { return wg.Wait(context.Background()) })
		if err := wg.Wait(ctx); err != nil {
			return err
		}
		if done.Load() != 2*n {
			return errors.New("Wait returned before the counter reached zero")
		}
		return gs.Wait(ctx)
	})
}

func TestWaitGroupCancel(t *testing.T) {
	rt := newRuntime(t, 2)
	var wg WaitGroup
	wg.Add(1)
	run(t, rt, func(ctx context.Context) error {
		cctx, cancel := context.WithCancel(ctx)
		h := runtime.Spawn(cctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, wg.Wait(ctx) })
		waitUntil(ctx, func() bool { return wg.c.nwait.Load() == 1 })
		cancel()
		if _, err := h.Join(ctx); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("cancelled Wait"), err)
		}
		if wg.c.nwait.Load() != 0 || wg.c.waiters.len != 0 {
			return errors.New("cancelled waiter still queued")
		}
		wg.Done()
		return wg.Wait(ctx)
	})
}

func TestWaitGroupNegativePanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "faio/sync: negative WaitGroup counter" {
			t.Fatalf("recovered %v", r)
		}
	}()
	var wg WaitGroup
	wg.Add(1)
	wg.Done()
	wg.Done()
}

// An Add that would take the counter below zero, or past the largest
// count, panics and leaves the counter as it was: a program that recovers
// still has a WaitGroup that counts right. (Before, the counter stayed at
// -1, and the next Add(1) brought it to zero and released the Waits.)
func TestWaitGroupBadAddPanicsAndKeepsTheCounter(t *testing.T) {
	addPanics := func(wg *WaitGroup, delta int, want string) {
		t.Helper()
		defer func() {
			if r := recover(); r != want {
				t.Fatalf("Add(%d) recovered %v, want %q", delta, r, want)
			}
		}()
		wg.Add(delta)
	}
	var wg WaitGroup
	wg.Add(1)
	wg.Done()
	addPanics(&wg, -1, "faio/sync: negative WaitGroup counter")
	wg.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := wg.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with one Add outstanding after the bad Done = %v, want it to wait", err)
	}
	addPanics(&wg, -2, "faio/sync: negative WaitGroup counter")
	wg.Add(1 << 62)
	addPanics(&wg, 1<<62, "faio/sync: WaitGroup counter overflow")
	wg.Add(-(1 << 62))
	wg.Done()
	if err := wg.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Many rounds of Add/Done racing with Waits: no Wait is left behind.
func TestWaitGroupStress(t *testing.T) {
	rounds := 300
	if raceEnabled {
		rounds = 60
	}
	rt := newRuntime(t, 2)
	run(t, rt, func(ctx context.Context) error {
		for range rounds {
			var wg WaitGroup
			wg.Add(4)
			waiters := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, spawnN(ctx, 4, func(ctx context.Context, _ int) error { return wg.Wait(ctx) })
			})
			var gs goGroup
			gs.Go(func() error { return wg.Wait(context.Background()) })
			for range 2 {
				runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) { wg.Done(); return struct{}{}, nil })
				go wg.Done()
			}
			if _, err := waiters.Join(ctx); err != nil {
				return err
			}
			if err := gs.Wait(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// The reuse loop `for { wg.Add(1); go work(); wg.Wait() }` with round 1's
// Done paused between its two halves: the counter update (count.Add) and
// the wake (reachedZero). Round 1's Wait sees zero and returns, round 2
// Adds 1 and waits; then the paused Done resumes. Its wake is stale and
// must not release round 2's Wait while the counter is 1. The test runs
// the Done's halves itself, for a goroutine and for a task waiting.
func TestWaitGroupStaleZeroDoesNotReleaseNextRound(t *testing.T) {
	rt := newRuntime(t, 2)
	for _, waiter := range []string{"goroutine", "task"} {
		t.Run(waiter, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var wg WaitGroup
			wg.Add(1)
			wg.c.count.Add(-1) // round 1's Done, first half
			if err := wg.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Add(1) // round 2
			res := make(chan error, 1)
			if waiter == "goroutine" {
				go func() { res <- wg.Wait(ctx) }()
			} else {
				h := runtime.SpawnOn(rt, func(ctx context.Context) (struct{}, error) {
					return struct{}{}, wg.Wait(ctx)
				})
				go func() { _, err := h.Join(ctx); res <- err }()
			}
			for wg.c.nwait.Load() == 0 {
				goruntime.Gosched()
			}
			wg.c.reachedZero() // round 1's Done, second half
			select {
			case err := <-res:
				n := wg.c.count.Load()
				wg.Done()
				t.Fatalf("round 2's Wait returned %v with the counter at %d", err, n)
			case <-time.After(50 * time.Millisecond):
			}
			if n := wg.c.nwait.Load(); n != 1 {
				t.Errorf("nwait = %d after the stale wake, want 1", n)
			}
			wg.Done() // round 2's Done releases it
			select {
			case err := <-res:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("round 2's Wait not released by round 2's Done")
			}
		})
	}
}

// A Latch keeps its one-shot semantics with the re-check in reachedZero:
// the count never rises again, so the CountDown that opens it wakes every
// waiter, and a late reachedZero finds nobody left.
func TestLatchOpensForAllWaiters(t *testing.T) {
	rt := newRuntime(t, 2)
	l := NewLatch(2)
	run(t, rt, func(ctx context.Context) error {
		h := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, spawnN(ctx, 3, func(ctx context.Context, _ int) error { return l.Wait(ctx) })
		})
		var gs goGroup
		gs.Go(func() error { return l.Wait(context.Background()) })
		waitUntil(ctx, func() bool { return l.c.nwait.Load() == 4 })
		l.CountDown()
		l.CountDown()
		if _, err := h.Join(ctx); err != nil {
			return err
		}
		if err := gs.Wait(ctx); err != nil {
			return err
		}
		l.c.reachedZero() // a stale call is harmless
		if n := l.c.nwait.Load(); n != 0 {
			return fmt.Errorf("nwait = %d after opening", n)
		}
		return l.Wait(ctx)
	})
}

func TestLatch(t *testing.T) {
	rt := newRuntime(t, 2)
	l := NewLatch(3)
	run(t, rt, func(ctx context.Context) error {
		var passed atomic.Int32
		h := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, spawnN(ctx, 4, func(ctx context.Context, _ int) error {
				if err := l.Wait(ctx); err != nil {
					return err
				}
				passed.Add(1)
				return nil
			})
		})
		waitUntil(ctx, func() bool { return l.c.nwait.Load() == 4 })
		for i := 3; i > 0; i-- {
			if l.Count() != i || l.TryWait() {
				return errors.New("latch open early")
			}
			if passed.Load() != 0 {
				return errors.New("waiter passed a closed latch")
			}
			l.CountDown()
		}
		if _, err := h.Join(ctx); err != nil {
			return err
		}
		if !l.TryWait() || passed.Load() != 4 {
			return errors.New("latch did not open")
		}
		return l.Wait(ctx)
	})
	var zero Latch
	if !zero.TryWait() {
		t.Fatal("zero Latch is not open")
	}
	func() {
		defer func() {
			if r := recover(); r != "faio/sync: Latch counted down below zero" {
				t.Fatalf("recovered %v", r)
			}
		}()
		l.CountDown()
	}()
	if l.Count() != 0 {
		t.Fatal("a refused CountDown changed the count")
	}
	func() {
		defer func() {
			if r := recover(); r != "faio/sync: negative Latch count" {
				t.Fatalf("recovered %v", r)
			}
		}()
		NewLatch(-1)
	}()
}
