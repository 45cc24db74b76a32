package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// A task spawning in a loop on a worker that nobody helps runs its
// children every so often (chargeSpawn): they start before the loop ends,
// whatever the queue's capacity, and even once its context is cancelled.
// With the default capacity the queue never overflows into the global
// queue either, pinned or not, which a spawner that only paused (or, on a
// pinned worker, waited in mine) would make it do.
func TestSpawnLoopRunsChildrenWhenNoWorkerHelps(t *testing.T) {
	for _, tc := range []struct {
		capacity          int
		cancelled, pinned bool
	}{{64, false, false}, {128, false, false}, {DefaultLocalQueueCapacity, false, false}, {DefaultLocalQueueCapacity, true, false}, {DefaultLocalQueueCapacity, false, true}} {
		capacity := tc.capacity
		name := "capacity=" + itoa(uint64(capacity))
		if tc.cancelled {
			name += "/cancelled"
		}
		if tc.pinned {
			name += "/pinned"
		}
		t.Run(name, func(t *testing.T) {
			if tc.pinned {
				t.Setenv(EnvPinned, "1")
			}
			rt := newRuntime(t, Config{Workers: 1, LocalQueueCapacity: capacity, PinnedWorkers: tc.pinned})
			const n = 4096
			var spawned, firstSeen atomic.Int64
			firstSeen.Store(-1)
			spawner := func(ctx context.Context) (struct{}, error) {
				for range n {
					Spawn(ctx, func(context.Context) (struct{}, error) {
						firstSeen.CompareAndSwap(-1, spawned.Load())
						return struct{}{}, nil
					})
					spawned.Add(1)
				}
				return struct{}{}, nil
			}
			_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				if !tc.cancelled {
					return spawner(ctx)
				}
				// A spawner that goes on after its task was cancelled:
				// its children start cancelled, but they must run.
				h := Spawn(ctx, spawner)
				h.Cancel()
				_, err := h.Join(ctx)
				return struct{}{}, err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := firstSeen.Load(); got < 0 || got > 2*CoopBudget {
				t.Errorf("the first child started after %d of %d spawns, want at most %d", got, n, 2*CoopBudget)
			}
			// The root itself came through the global queue.
			if pops := rt.Stats().GlobalPops; capacity == DefaultLocalQueueCapacity && pops > 1 {
				t.Errorf("%d tasks went through the global queue, want only the root", pops)
			}
		})
	}
}

// A cancelled task that loops on operations failing at once (Consume
// returns its error) still yields when its budget is spent, so the other
// tasks of its worker run during the loop.
func TestConsumeYieldsInACancelledTask(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	var otherRan atomic.Bool
	ranDuringLoop := false
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		h := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			Spawn(ctx, func(context.Context) (struct{}, error) {
				otherRan.Store(true)
				return struct{}{}, nil
			})
			for range 4 * CoopBudget {
				if Consume(ctx) == nil {
					return struct{}{}, errors.New("Consume in a cancelled task returned nil")
				}
			}
			ranDuringLoop = otherRan.Load()
			return struct{}{}, nil
		})
		h.Cancel()
		return h.Join(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ranDuringLoop {
		t.Error("the other task did not run during the cancelled task's loop of 512 Consume calls")
	}
}

// Spawn loops under spawn loops on pinned workers: a second spawner that
// yields while the first waits behind its children waits in mine, and
// every task runs once.
func TestNestedSpawnLoopsOnPinnedWorkers(t *testing.T) {
	t.Setenv(EnvPinned, "1")
	for _, workers := range []int{1, 2} {
		t.Run("workers="+itoa(uint64(workers)), func(t *testing.T) {
			rt := newRuntime(t, Config{Workers: workers, PinnedWorkers: true})
			const outer, inner = 300, 300
			var ran atomic.Int64
			_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				for range outer {
					Spawn(ctx, func(ctx context.Context) (struct{}, error) {
						for range inner {
							Spawn(ctx, func(context.Context) (struct{}, error) {
								ran.Add(1)
								return struct{}{}, nil
							})
						}
						return struct{}{}, nil
					})
				}
				return struct{}{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := ran.Load(); got != outer*inner {
				t.Fatalf("%d of %d tasks ran", got, outer*inner)
			}
		})
	}
}
