package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// context.Context: "If Done is not yet closed, Err returns nil." A task's
// cancellation raised the flag Err reads before it closed Done, with no
// lock between: a goroutine saw Canceled with Done still open (found by a
// reviewer; failed within 2,000 rounds on every run).
func TestErrNeverBeforeDoneCloses(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	for i := 0; i < 2000; i++ {
		got := make(chan context.Context, 1)
		h := SpawnOn(rt, func(ctx context.Context) (struct{}, error) {
			got <- ctx
			return struct{}{}, Sleep(ctx, time.Hour)
		})
		ctx := <-got
		done := ctx.Done()
		go h.Cancel()
		for ctx.Err() == nil {
		}
		select {
		case <-done:
		default:
			t.Fatalf("round %d: Err() = %v while Done is still open", i, ctx.Err())
		}
		h.Join(context.Background())
	}
}

// Timing calls that complete at once are charged to the task's budget, as
// every operation of the runtime that completes without suspending is: a
// loop of Sleep(ctx, 0), of SleepUntil a past instant, or of an
// Interval's Tick behind its schedule held its worker for good, and a
// task queued behind it never ran (found by a reviewer).
func TestReadyTimingCallsLetOthersRun(t *testing.T) {
	for name, ready := range map[string]func(ctx context.Context, iv *Interval) error{
		"Sleep(0)":  func(ctx context.Context, _ *Interval) error { return Sleep(ctx, 0) },
		"Sleep(-1)": func(ctx context.Context, _ *Interval) error { return Sleep(ctx, -1) },
		"SleepUntil(past)": func(ctx context.Context, _ *Interval) error {
			return SleepUntil(ctx, time.Now().Add(-time.Second))
		},
		"Interval.Tick behind schedule": func(ctx context.Context, iv *Interval) error {
			_, err := iv.Tick(ctx)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			rt := newRuntime(t, Config{Workers: 1})
			var other atomic.Bool
			_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
				Spawn(ctx, func(ctx context.Context) (int, error) { other.Store(true); return 0, nil })
				iv, _ := NewInterval(time.Nanosecond, Burst)
				deadline := time.Now().Add(2 * time.Second)
				n := 0
				for !other.Load() && time.Now().Before(deadline) {
					if err := ready(ctx, iv); err != nil {
						return 0, err
					}
					n++
				}
				if !other.Load() {
					t.Errorf("%d calls over 2 s and the worker's other task never ran", n)
				}
				return 0, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// So is a Join of a task that has finished: a loop of them held the
// worker too.
func TestJoinOfAFinishedTaskLetsOthersRun(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	var other atomic.Bool
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		done := Spawn(ctx, func(ctx context.Context) (int, error) { return 7, nil })
		if v, err := done.Join(ctx); v != 7 || err != nil {
			return 0, err
		}
		Spawn(ctx, func(ctx context.Context) (int, error) { other.Store(true); return 0, nil })
		deadline := time.Now().Add(2 * time.Second)
		n := 0
		for !other.Load() && time.Now().Before(deadline) {
			if v, err := done.Join(ctx); v != 7 || err != nil {
				t.Errorf("Join of the finished task: %d, %v", v, err)
				return 0, nil
			}
			n++
		}
		if !other.Load() {
			t.Errorf("%d Joins over 2 s and the worker's other task never ran", n)
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
