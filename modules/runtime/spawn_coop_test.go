package runtime

import (
	"context"
	"sync/atomic"
	"testing"
)

// A task spawning in a loop on a worker that nobody helps runs its
// children every so often (chargeSpawn): they start before the loop ends,
// whatever the queue's capacity. With the default capacity the queue
// never overflows into the global queue either, which a spawner that only
// paused would make it do.
func TestSpawnLoopRunsChildrenWhenNoWorkerHelps(t *testing.T) {
	for _, capacity := range []int{64, 128, DefaultLocalQueueCapacity} {
		t.Run("capacity="+itoa(uint64(capacity)), func(t *testing.T) {
			rt := newRuntime(t, Config{Workers: 1, LocalQueueCapacity: capacity})
			const n = 4096
			var spawned, firstSeen atomic.Int64
			firstSeen.Store(-1)
			_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				for range n {
					Spawn(ctx, func(context.Context) (struct{}, error) {
						firstSeen.CompareAndSwap(-1, spawned.Load())
						return struct{}{}, nil
					})
					spawned.Add(1)
				}
				return struct{}{}, nil
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
