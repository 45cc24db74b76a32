package runtime

import (
	"context"
	"sync"
	"testing"
	"time"
)

// spawnSleeper spawns a task on rt that sleeps for an hour, and returns
// it with its context once it runs.
func spawnSleeper(rt *Runtime) (*JoinHandle[int], context.Context) {
	ch := make(chan context.Context, 1)
	h := SpawnOn(rt, func(ctx context.Context) (int, error) {
		ch <- ctx
		return 0, Sleep(ctx, time.Hour)
	})
	return h, <-ch
}

// AfterFunc on a task that is cancelled already must not run f on the
// caller's goroutine: the context package calls it while holding the lock
// of the context it derives (propagateCancel), and f, that context's
// cancel, takes the same lock.
func TestAfterFuncOnACancelledTaskDoesNotRunInline(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	h, sleeperCtx := spawnSleeper(rt)
	task := Current(sleeperCtx)
	h.Cancel()
	if task.Err() == nil {
		t.Fatal("the task is not cancelled after Cancel")
	}
	var mu sync.Mutex
	cancelled := false // the derived context's state, guarded by mu
	ran := make(chan struct{})
	done := make(chan bool)
	go func() {
		mu.Lock() // the derived context's lock, held around AfterFunc
		stop := task.AfterFunc(func() {
			mu.Lock()
			cancelled = true
			mu.Unlock()
			close(ran)
		})
		mu.Unlock()
		done <- stop()
	}()
	select {
	case stopped := <-done:
		if stopped {
			t.Error("stop reported that it stopped f, which had been started")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFunc on a cancelled task ran f on the caller's goroutine, under the caller's lock: deadlock")
	}
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("f never ran")
	}
	mu.Lock()
	if !cancelled {
		t.Error("f closed ran without cancelling")
	}
	mu.Unlock()
	if _, err := h.Join(context.Background()); err == nil {
		t.Error("the cancelled task's Join returned nil")
	}
}

// The same race end to end: context.WithCancel over a task's context while
// the task is cancelled. It deadlocked within a few dozen rounds.
func TestDeriveContextWhileTaskIsCancelled(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	for i := range 2000 {
		h, c := spawnSleeper(rt)
		done := make(chan struct{})
		start := make(chan struct{})
		go func() {
			defer close(done)
			<-start
			cctx, cancel := context.WithCancel(c)
			defer cancel()
			<-cctx.Done() // reached by the task's cancellation
		}()
		go func() {
			<-start
			h.Cancel()
		}()
		close(start)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: a context derived from a task being cancelled deadlocked or was never cancelled", i)
		}
		if _, err := h.Join(context.Background()); err == nil {
			t.Fatalf("round %d: the cancelled task's Join returned nil", i)
		}
	}
}
