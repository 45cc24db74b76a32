package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"testing"
)

// Blocking's f runs on a goroutine labelled like the calling task (as a
// goroutine the task started with go would be), so that a CPU profile
// charges f's time to the task's pprof labels: f runs exactly where
// profiles are wanted (a long computation, a cgo call).
func TestBlockingKeepsProfilerLabels(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		var err error
		pprof.Do(ctx, pprof.Labels("faio-review", "blocking"), func(ctx context.Context) {
			want := getProfLabel()
			var got any
			_, err = Blocking(ctx, func() (int, error) {
				got = getProfLabel()
				return 0, nil
			})
			if err == nil && got != want {
				err = fmt.Errorf("f ran with profiler labels %p, the task with %p", got, want)
			}
		})
		return 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Blocking with a context that has ended returns ctx.Err() without
// calling f from a plain goroutine too, as from a task.
func TestBlockingFromGoroutineWithEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	_, err := Blocking(ctx, func() (int, error) { called = true; return 1, nil })
	if !errors.Is(err, context.Canceled) || called {
		t.Fatalf("Blocking(ended ctx) from a goroutine = %v, f called: %v; want context.Canceled, f not called", err, called)
	}
}

// A cancellation racing f's return: Blocking returns f's results or
// ctx.Err(), never a mix, and (under -race) reads nothing f still writes.
func TestBlockingCancellationRacesCompletion(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		outcomes := map[bool]int{}
		for i := 0; i < 3000; i++ {
			cctx, cancel := context.WithCancel(ctx)
			v, err := Blocking(cctx, func() ([]int, error) {
				if i%2 == 0 {
					cancel()
				}
				return []int{i}, errors.New("f")
			})
			cancel()
			switch {
			case err != nil && err.Error() == "f":
				if len(v) != 1 || v[0] != i {
					return 0, fmt.Errorf("run %d: f's error with value %v", i, v)
				}
				outcomes[true]++
			case errors.Is(err, context.Canceled):
				if v != nil {
					return 0, fmt.Errorf("run %d: ctx.Err() with value %v", i, v)
				}
				outcomes[false]++
			default:
				return 0, fmt.Errorf("run %d: Blocking = %v, %v", i, v, err)
			}
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
