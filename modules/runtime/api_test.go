package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// The task API as a user of package context or of tokio would use it: what
// such a user expects, where the documentation promises it.

// A root that fails otherwise than by its cancellation while Close cancels
// it (a panic in its clean-up) is reported with ErrClosed, not lost: a
// root's result counts as observed, so nothing else reports it. Before,
// BlockOn and WaitAll returned a bare ErrClosed and the panic was seen
// nowhere.
func TestClosedRootsKeepTheirFailures(t *testing.T) {
	var mu sync.Mutex
	var reported []TaskFailure
	rt, err := New(Config{Workers: 2, OnTaskFailure: func(f TaskFailure) {
		mu.Lock()
		reported = append(reported, f)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 3)
	root := func(fail bool) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			started <- struct{}{}
			err := Sleep(ctx, time.Hour) // until Close
			if fail {
				panic("clean-up failed")
			}
			return 0, err
		}
	}
	blockOn := make(chan error, 1)
	go func() {
		_, err := BlockOn(rt, root(true))
		blockOn <- err
	}()
	waitAll := make(chan error, 1)
	go func() {
		_, err := WaitAll(rt, root(false), root(true))
		waitAll <- err
	}()
	for range 3 {
		<-started
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan error{"BlockOn": blockOn, "WaitAll": waitAll} {
		err := <-ch
		var pe *PanicError
		if !errors.Is(err, ErrClosed) || !errors.As(err, &pe) || pe.Value != "clean-up failed" {
			t.Errorf("%s of a root that panicked while Close cancelled it = %v, want ErrClosed joined with its *PanicError", name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 0 {
		t.Errorf("roots' failures reported as unjoined too: %v", reported)
	}
	// A root that only returns its cancellation still gets ErrClosed alone.
	if _, err := BlockOn(rt, root(false)); err != ErrClosed {
		t.Errorf("BlockOn after Close = %v, want ErrClosed", err)
	}
}

// Stats after Close count every task: a worker that found the runtime shut
// down when it went to park used to leave its last completions unpublished
// for good (Live stayed above zero). The race is narrow: under -race a
// stale count showed in about one round in twelve.
func TestStatsAfterCloseCountEveryTask(t *testing.T) {
	for range 100 {
		rt, err := New(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		_, err = BlockOn(rt, func(ctx context.Context) (int, error) {
			for range 3 {
				Spawn(ctx, func(ctx context.Context) (int, error) { return 0, nil })
			}
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		if s := rt.Stats(); s.Live != 0 || s.Completed != 4 {
			t.Fatalf("Stats after Close: Live %d, Completed %d of %d spawned; want 0, 4", s.Live, s.Completed, s.Spawned)
		}
	}
}
