package sync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// Close of the runtime ends the Acquires and Locks that tasks wait in
// with a foreign context (one of their own, never cancelled), and loses
// no permit or lock: afterwards every permit is free and the Mutex is
// unlocked. The tasks stop once their own context is cancelled; Close
// must return without the foreign context being cancelled.
func TestRuntimeCloseKeepsPermitsAndLocks(t *testing.T) {
	for run := 0; run < 20; run++ {
		rt, err := runtime.New(runtime.Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		own, cancelOwn := context.WithCancel(context.Background())
		const permits = 3
		sem := NewSemaphore(permits)
		var mu Mutex
		var inside atomic.Int32
		var bad atomic.Value
		for i := 0; i < 200; i++ {
			runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
				for ctx.Err() == nil {
					if i%2 == 0 {
						if err := sem.Acquire(own, 1); err != nil {
							if !errors.Is(err, runtime.ErrClosed) {
								bad.Store(err)
							}
							return 0, nil
						}
						if n := inside.Add(1); n > permits {
							bad.Store(errors.New("more holders than permits"))
						}
						_ = runtime.Yield(ctx)
						inside.Add(-1)
						sem.Release(1)
					} else {
						if err := mu.Lock(own); err != nil {
							if !errors.Is(err, runtime.ErrClosed) {
								bad.Store(err)
							}
							return 0, nil
						}
						_ = runtime.Yield(ctx)
						mu.Unlock()
					}
				}
				return 0, nil
			})
		}
		time.Sleep(10 * time.Millisecond)
		closed := make(chan struct{})
		go func() { rt.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			cancelOwn()
			<-closed
			t.Fatalf("run %d: Close did not return within 5 s with tasks in Acquire/Lock on a foreign context", run)
		}
		cancelOwn()
		if !sem.TryAcquire(permits) {
			t.Fatalf("run %d: after Close %d permits free, want %d", run, sem.free(), permits)
		}
		if !mu.TryLock() {
			t.Fatalf("run %d: after Close the Mutex is held", run)
		}
		if e := bad.Load(); e != nil {
			t.Fatalf("run %d: %v", run, e)
		}
	}
}
