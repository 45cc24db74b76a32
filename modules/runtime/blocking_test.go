package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A task in Blocking leaves its worker to the others: on one worker, and
// on pinned workers, the task that unblocks f runs meanwhile (called
// directly, f would hold the only worker that could run it, for good).
func TestBlockingFreesTheWorker(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		t.Run(fmt.Sprintf("pinned=%v", pinned), func(t *testing.T) {
			rt := newRuntime(t, Config{Workers: 1, PinnedWorkers: pinned})
			within(t, 10*time.Second, "Blocking on a Go channel that a task closes", func() {
				got, err := BlockOn(rt, func(ctx context.Context) (string, error) {
					ch := make(chan string)
					Spawn(ctx, func(ctx context.Context) (int, error) {
						ch <- "sent by a task"
						return 0, nil
					})
					return Blocking(ctx, func() (string, error) { return <-ch, nil })
				})
				if got != "sent by a task" || err != nil {
					t.Errorf("Blocking = %q, %v", got, err)
				}
			})
		})
	}
}

// Blocking returns f's value and error; a panic in f is raised in the
// task with its value, and a Goexit in f becomes a panic of the task; f is
// not called once ctx has ended; from a plain goroutine f runs directly.
func TestBlockingResults(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	errF := errors.New("f failed")
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		if v, err := Blocking(ctx, func() (int, error) { return 7, errF }); v != 7 || err != errF {
			return 0, fmt.Errorf("Blocking = %d, %v; want 7, %v", v, err, errF)
		}
		for _, tc := range []struct {
			name string
			f    func() (int, error)
			want any
		}{
			{"panic", func() (int, error) { panic("boom") }, "boom"},
			{"Goexit", func() (int, error) { goexitNow(); return 0, nil }, errBlockingGoexit},
		} {
			_, err := Spawn(ctx, func(ctx context.Context) (int, error) {
				return Blocking(ctx, tc.f)
			}).Join(ctx)
			var pe *PanicError
			if !errors.As(err, &pe) || pe.Value != tc.want {
				return 0, fmt.Errorf("a task whose Blocking's f called %s ended with %v, want a *PanicError of %v", tc.name, err, tc.want)
			}
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		called := false
		if _, err := Blocking(cctx, func() (int, error) { called = true; return 0, nil }); !errors.Is(err, context.Canceled) || called {
			return 0, fmt.Errorf("Blocking with an ended context = %v, f called: %v", err, called)
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var g int
	if v, err := Blocking(context.Background(), func() (int, error) { g++; return g, nil }); v != 1 || err != nil {
		t.Fatalf("Blocking from a goroutine = %d, %v", v, err)
	}
}

// When ctx ends first, Blocking returns at once and f runs on; Close
// returns though f still blocks.
func TestBlockingReturnsWhenItsContextEnds(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	release := make(chan struct{})
	defer close(release)
	fDone := make(chan struct{})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_, err := Blocking(cctx, func() (int, error) {
			defer close(fDone)
			<-release
			return 1, nil
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("Blocking past its deadline = %v", err)
		}
		select {
		case <-fDone:
			return 0, errors.New("f finished, but nothing released it")
		default:
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inClose := make(chan error, 1)
	own, cancelOwn := context.WithCancel(context.Background())
	defer cancelOwn()
	SpawnOn(rt, func(ctx context.Context) (int, error) {
		_, err := Blocking(own, func() (int, error) { <-release; return 0, nil })
		inClose <- err
		return 0, nil
	})
	time.Sleep(20 * time.Millisecond)
	within(t, 10*time.Second, "Close with a task in Blocking", func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := <-inClose; !errors.Is(err, ErrClosed) {
		t.Fatalf("Blocking on a context of its own during Close = %v, want ErrClosed", err)
	}
}
