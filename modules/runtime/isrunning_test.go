package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Only a task's own coroutine passes isRunning: goroutines and other tasks
// (among them later tasks run on the same pooled coroutine) asking with a
// task's context, while tasks finish and coroutines are reused, never do.
func TestIsRunningOnlyOnOwnCoroutine(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 4})
	ctxs := make(chan context.Context, 1024)
	var bad atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case ctx := <-ctxs:
					for range 50 {
						if Current(ctx).WorkerID() != -1 || Current(ctx).running() != nil {
							bad.Add(1)
						}
						_ = Consume(ctx)
					}
				}
			}
		})
	}
	var prev atomic.Pointer[Task]
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			for i := range 2000 {
				Spawn(ctx, func(ctx context.Context) (int, error) {
					me := Current(ctx)
					if me.running() != me {
						return 0, fmt.Errorf("task does not pass for itself")
					}
					if p := prev.Swap(me); p != nil && p.running() != nil {
						bad.Add(1)
					}
					select {
					case ctxs <- ctx:
					default:
					}
					if i%3 == 0 {
						Yield(ctx)
					}
					if p := prev.Load(); p != me && p != nil && p.running() != nil {
						bad.Add(1)
					}
					return 0, nil
				})
			}
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if n := bad.Load(); n != 0 {
		t.Fatalf("%d checks passed isRunning for a task not their own", n)
	}
}
