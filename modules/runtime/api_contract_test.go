package runtime

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A Join that gave up on its ctx observed nothing: the task's later panic
// must still reach Config.OnTaskFailure (or the log), not be dropped.
func TestJoinThatGaveUpObservesNothing(t *testing.T) {
	var mu sync.Mutex
	var reported []TaskFailure
	rt := newRuntime(t, Config{Workers: 2, OnTaskFailure: func(f TaskFailure) {
		mu.Lock()
		reported = append(reported, f)
		mu.Unlock()
	}})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		h := Spawn(ctx, func(ctx context.Context) (int, error) {
			Sleep(ctx, 50*time.Millisecond)
			panic("slow task failed")
		})
		jctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer cancel()
		if _, err := h.Join(jctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Join = %v, want DeadlineExceeded", err)
		}
		return 0, nil // gives up on h; BlockOn waits for it all the same
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 {
		t.Fatalf("panic of a task whose only Join timed out reported %d times, want 1", len(reported))
	}
}

// Yield is the cooperative spin-wait. In a cancelled task it returned
// ctx.Err() without yielding or charging the budget: the loop holds its
// worker for good, the task it waits for never runs, Join (and Close) hang.
func TestYieldInCancelledTaskLetsOthersRun(t *testing.T) {
	rt, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var flag atomic.Bool
	SpawnOn(rt, func(ctx context.Context) (int, error) {
		Sleep(ctx, 20*time.Millisecond)
		flag.Store(true)
		return 0, nil
	})
	h := SpawnOn(rt, func(ctx context.Context) (int, error) {
		for !flag.Load() {
			_ = Yield(ctx)
		}
		return 0, nil
	})
	h.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := h.Join(ctx); err != nil {
		t.Fatalf("Join of the spinner: %v (runtime leaked: its worker is held for good)", err)
	}
	rt.Close()
}

// An OnTaskFailure hook that shuts the runtime down: reported from inside
// Close's sync.Once, its Close re-entered the Once and deadlocked.
func TestCloseFromOnTaskFailureHook(t *testing.T) {
	var rt *Runtime
	rt, err := New(Config{Workers: 2, OnTaskFailure: func(TaskFailure) { rt.Close() }})
	if err != nil {
		t.Fatal(err)
	}
	h := SpawnOn(rt, func(ctx context.Context) (int, error) { return 0, errors.New("failed") })
	<-h.Done()
	closed := make(chan error, 1)
	go func() { closed <- rt.Close() }()
	select {
	case <-closed:
	case <-time.After(3 * time.Second):
		t.Fatal("Close deadlocked: the hook's Close re-entered closeOnce")
	}
}

// context.Context: "Successive calls to Done return the same value."
func TestTaskDoneIsOneChannel(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		h := Spawn(ctx, func(ctx context.Context) (int, error) {
			d1 := ctx.Done()
			Sleep(ctx, time.Hour) // until h.Cancel
			if d2 := ctx.Done(); d1 != d2 {
				return 0, errors.New("Done returned another channel once cancelled")
			}
			return 0, nil
		})
		Sleep(ctx, time.Millisecond)
		h.Cancel()
		return h.Join(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// SubmitOn with a live ctx, ended by Close: the caller's ctx was never
// cancelled, yet it got context.Canceled (ErrClosed after Close returned).
func TestSubmitOnEndedByCloseSaysErrClosed(t *testing.T) {
	rt := newRingRuntime(t, Config{Workers: 2})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	done := make(chan error, 1)
	go func() {
		_, err := SubmitOn(context.Background(), rt, &readOp{fd: p[0], buf: make([]byte, 1), off: ^uint64(0)})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	rt.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("SubmitOn(context.Background()) ended by Close = %v, want ErrClosed", err)
	}
}
