package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// closeOrUnstick closes rt and fails the test if Close does not return
// within d; it then calls unstick (which cancels the foreign contexts) so
// that Close, and the test, end.
func closeOrUnstick(t *testing.T, rt *Runtime, d time.Duration, what string, unstick func()) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- rt.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(d):
		t.Errorf("%s: Close did not return within %v", what, d)
		unstick()
		<-closed
	}
}

// A task spawned just before Close, which begins a wait on a cancellable
// context of its own only once Close has begun (its first run comes
// after), does not hold Close: the wait fails with ErrClosed (or the task
// never runs). This is the server task that calls Accept on a
// net.Listener adapter as it starts.
func TestCloseEndsForeignWaitsOfTasksJustStarted(t *testing.T) {
	for i := 0; i < 100; i++ {
		rt, err := New(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		own, cancelOwn := context.WithCancel(context.Background())
		h := SpawnOn(rt, func(ctx context.Context) (error, error) {
			return Suspend(own, func(Waker) bool { return true }), nil
		})
		closeOrUnstick(t, rt, 5*time.Second, fmt.Sprintf("run %d", i), cancelOwn)
		if got, err := h.Join(context.Background()); err == nil && !errors.Is(got, ErrClosed) || err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("run %d: the task's wait = %v (task: %v), want ErrClosed", i, got, err)
		}
		cancelOwn()
		if t.Failed() {
			return
		}
	}
}

// Thousands of tasks in waits on foreign cancellable contexts (Sleep,
// Suspend, a context with a deadline, Blocking, and waits of a task run
// nested by RunNext and of its caller) all end with ErrClosed at Close.
func TestCloseEndsThousandsOfForeignWaits(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	own, cancelOwn := context.WithCancel(context.Background())
	defer cancelOwn()
	timed, cancelTimed := context.WithTimeout(context.Background(), time.Hour)
	defer cancelTimed()
	release := make(chan struct{})
	defer close(release)
	waits := []func(ctx context.Context) error{
		func(context.Context) error { return Sleep(own, time.Hour) },
		func(context.Context) error { return Suspend(own, func(Waker) bool { return true }) },
		func(context.Context) error { return Suspend(timed, func(Waker) bool { return true }) },
		func(ctx context.Context) error {
			_, err := Blocking(own, func() (int, error) { <-release; return 0, nil })
			return err
		},
		func(ctx context.Context) error {
			// A nested run (RunNext; nothing on pinned workers) of a
			// task that waits, then a wait of the caller.
			nested := Spawn(ctx, func(ctx context.Context) (error, error) {
				return Suspend(own, func(Waker) bool { return true }), nil
			})
			RunNext(ctx)
			err := Sleep(own, time.Hour)
			if nerr, _ := nested.Join(context.Background()); !errors.Is(nerr, ErrClosed) {
				return fmt.Errorf("nested task's wait = %v", nerr)
			}
			return err
		},
	}
	const n = 3000
	var started sync.WaitGroup
	var wrong atomic.Int32
	var first atomic.Value
	for i := 0; i < n; i++ {
		started.Add(1)
		wait := waits[i%len(waits)]
		SpawnOn(rt, func(ctx context.Context) (int, error) {
			started.Done()
			if err := wait(ctx); !errors.Is(err, ErrClosed) {
				wrong.Add(1)
				first.CompareAndSwap(nil, fmt.Sprintf("wait %d = %v", i%len(waits), err))
			}
			return 0, nil
		})
	}
	started.Wait()
	time.Sleep(50 * time.Millisecond)
	closeOrUnstick(t, rt, 10*time.Second, "thousands of foreign waits", cancelOwn)
	if w := wrong.Load(); w != 0 {
		t.Fatalf("%d of %d waits did not end with ErrClosed; first: %v", w, n, first.Load())
	}
}

// A task that yields in a loop on a cancellable context of its own, which
// Close's cancellation of the tasks does not reach, does not hold Close:
// Yield returns ErrClosed once Close has begun (it used to hold Close for
// ever). Yield on the task's own context, or on one derived from it, keeps
// returning the context's error as before.
func TestCloseEndsAYieldLoopOnAForeignContext(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	own, cancelOwn := context.WithCancel(context.Background())
	defer cancelOwn()
	looping := make(chan struct{}, 3)
	loop := func(pick func(ctx context.Context) context.Context) *JoinHandle[error] {
		return SpawnOn(rt, func(ctx context.Context) (error, error) {
			ctx = pick(ctx)
			looping <- struct{}{}
			for {
				if err := Yield(ctx); err != nil {
					return err, nil
				}
			}
		})
	}
	foreign := loop(func(context.Context) context.Context { return own })
	mine := loop(func(ctx context.Context) context.Context { return ctx })
	derived := loop(func(ctx context.Context) context.Context {
		ctx, cancel := context.WithCancel(ctx)
		_ = cancel // ends with the task's cancellation
		return ctx
	})
	for range 3 {
		<-looping
	}
	closeOrUnstick(t, rt, 10*time.Second, "a Yield loop", cancelOwn)
	for _, c := range []struct {
		name string
		h    *JoinHandle[error]
		want error
	}{{"foreign", foreign, ErrClosed}, {"own", mine, context.Canceled}, {"derived", derived, context.Canceled}} {
		got, err := c.h.Join(context.Background())
		if err != nil || !errors.Is(got, c.want) {
			t.Errorf("the loop on its %s context ended with %v (task: %v), want %v", c.name, got, err, c.want)
		}
	}
}
