package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"
)

// handOff wakes a task waiting in Suspend: it makes a pair of a wait and
// its wake for the tests below.
type handOff struct {
	w     Waker
	armed atomic.Bool
}

func (h *handOff) wait(ctx context.Context) error {
	return Suspend(ctx, func(w Waker) bool {
		h.w = w
		h.armed.Store(true)
		return true
	})
}

// A task that wakes another and calls RunNext runs it on the spot: the
// woken task sees itself as the running task (Current, WorkerID, InTask),
// may spawn, and once it waits again the caller goes on as itself.
func TestRunNextRunsTheWokenTask(t *testing.T) {
	skipIfPinned(t, "RunNext does nothing on pinned workers")
	rt := newRuntime(t, Config{Workers: 1})
	var ranIn, spawned atomic.Int32
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		var h handOff
		var bErr error
		b := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			for range 3 {
				if err := h.wait(ctx); err != nil {
					return struct{}{}, err
				}
				if Current(ctx).running() == nil || Current(ctx).WorkerID() != 0 || !InTask(ctx) {
					bErr = errors.New("the nested task does not see itself running")
				}
				ranIn.Add(1)
				Spawn(ctx, func(context.Context) (struct{}, error) {
					spawned.Add(1)
					return struct{}{}, nil
				})
			}
			return struct{}{}, nil
		})
		for i := range 3 {
			for !h.armed.Load() {
				if err := Yield(ctx); err != nil {
					return struct{}{}, err
				}
			}
			h.armed.Store(false)
			if !h.w.Wake() {
				return struct{}{}, fmt.Errorf("hand-off %d: Wake = false", i)
			}
			if !RunNext(ctx) {
				return struct{}{}, fmt.Errorf("hand-off %d: RunNext ran nothing with the woken task in the LIFO slot", i)
			}
			if got := ranIn.Load(); got != int32(i+1) {
				return struct{}{}, fmt.Errorf("hand-off %d: the woken task ran %d times by RunNext's return", i, got)
			}
			if Current(ctx).running() == nil || Current(ctx).WorkerID() != 0 {
				return struct{}{}, errors.New("after RunNext the caller does not see itself running")
			}
		}
		if _, err := b.Join(ctx); err != nil {
			return struct{}{}, err
		}
		if bErr != nil {
			return struct{}{}, bErr
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The children the nested task spawned ran too (BlockOn waited).
	if got := spawned.Load(); got != 3 {
		t.Errorf("%d of the 3 children spawned in nested runs ran", got)
	}
}

// A task run by RunNext that pauses (a spawner whose coop budget ran out,
// with room in its queue) is queued, not left for the loop's next choice,
// where the caller, or another nested spawner, pausing in turn would take
// its place: both spawners' children all run, and both return.
func TestRunNextSpawnersPause(t *testing.T) {
	skipIfPinned(t, "RunNext does nothing on pinned workers")
	for _, workers := range []int{1, 2} {
		rt := newRuntime(t, Config{Workers: workers})
		var ran atomic.Int64
		const n = 5 * CoopBudget
		spawnMany := func(ctx context.Context) {
			for range n {
				Spawn(ctx, func(context.Context) (struct{}, error) {
					ran.Add(1)
					return struct{}{}, nil
				})
			}
		}
		var err error
		within(t, 20*time.Second, "spawners run by RunNext", func() {
			_, err = BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				for round := range 20 {
					Spawn(ctx, func(ctx context.Context) (struct{}, error) {
						spawnMany(ctx)
						return struct{}{}, nil
					})
					RunNext(ctx)
					spawnMany(ctx)
					_ = round
				}
				return struct{}{}, nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ran.Load(), int64(20*2*n); got != want {
			t.Errorf("workers=%d: %d of %d children ran", workers, got, want)
		}
	}
}

// A task run by RunNext may sleep, with a deadline, on its worker's wheel,
// and be cancelled there; the caller meanwhile goes on, and is cancelled
// itself while it runs the other: each ends with its own error.
func TestRunNextSleepsAndCancellation(t *testing.T) {
	skipIfPinned(t, "RunNext does nothing on pinned workers")
	rt := newRuntime(t, Config{Workers: 2})
	var err error
	within(t, 20*time.Second, "sleepers run by RunNext", func() {
		_, err = BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			for round := range 50 {
				cctx, cancel := context.WithCancel(ctx)
				short := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
					return struct{}{}, Sleep(ctx, time.Millisecond)
				})
				RunNext(ctx)
				long := Spawn(cctx, func(ctx context.Context) (struct{}, error) {
					cancel() // cancels itself and its caller's derived ctx
					return struct{}{}, Sleep(ctx, time.Hour)
				})
				RunNext(cctx)
				if err := cctx.Err(); err == nil {
					return struct{}{}, fmt.Errorf("round %d: the nested task's cancel did not reach its caller's ctx", round)
				}
				if _, err := long.Join(ctx); !errors.Is(err, context.Canceled) {
					return struct{}{}, fmt.Errorf("round %d: the cancelled sleeper's Join = %v", round, err)
				}
				if _, err := short.Join(ctx); err != nil {
					return struct{}{}, fmt.Errorf("round %d: the short sleeper's Join = %v", round, err)
				}
			}
			return struct{}{}, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// RunNext does nothing where it must not: from a plain goroutine, with an
// empty LIFO slot, inside a nested run, and after maxNestedRuns runs until
// the worker's loop has chosen a task again.
func TestRunNextBounds(t *testing.T) {
	skipIfPinned(t, "RunNext does nothing on pinned workers")
	rt := newRuntime(t, Config{Workers: 1})
	if RunNext(WithRuntime(context.Background(), rt)) {
		t.Error("RunNext ran a task from a plain goroutine")
	}
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		if RunNext(ctx) {
			return struct{}{}, errors.New("RunNext ran a task with the LIFO slot empty")
		}
		var inner atomic.Int32
		Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			Spawn(ctx, func(context.Context) (struct{}, error) { return struct{}{}, nil })
			if RunNext(ctx) {
				inner.Add(1)
			}
			return struct{}{}, nil
		})
		if !RunNext(ctx) {
			return struct{}{}, errors.New("RunNext did not run the task just spawned")
		}
		if inner.Load() != 0 {
			return struct{}{}, errors.New("a nested run ran another task nested")
		}
		// The bound: a task spawning and running each child at once
		// gets maxNestedRuns of them, then none
		// until its worker's loop chooses a task.
		if err := Yield(ctx); err != nil {
			return struct{}{}, err
		}
		for round := range 2 {
			ran := 0
			for range 3 * maxNestedRuns {
				Spawn(ctx, func(context.Context) (struct{}, error) { return struct{}{}, nil })
				if RunNext(ctx) {
					ran++
				}
			}
			if ran != maxNestedRuns {
				return struct{}{}, fmt.Errorf("round %d: %d nested runs before the loop chose a task, want %d", round, ran, maxNestedRuns)
			}
			if err := Yield(ctx); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A task run by RunNext that calls runtime.Goexit fails with ErrGoexit,
// and the task that ran it goes on: Go's coroutines pass a Goexit on to
// the goroutine that resumed them, which would have ended the caller.
func TestRunNextSurvivesGoexit(t *testing.T) {
	skipIfPinned(t, "RunNext does nothing on pinned workers")
	rt := newRuntime(t, Config{Workers: 1})
	var err error
	within(t, 10*time.Second, "BlockOn of a task whose nested run called Goexit", func() {
		_, err = BlockOn(rt, goexitRounds)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goexitRounds is TestRunNextSurvivesGoexit's root task.
func goexitRounds(ctx context.Context) (struct{}, error) {
	{
		for round := range 3 {
			h := Spawn(ctx, func(context.Context) (struct{}, error) {
				goruntime.Goexit()
				return struct{}{}, nil
			})
			if !RunNext(ctx) {
				return struct{}{}, fmt.Errorf("round %d: RunNext ran nothing", round)
			}
			if _, err := h.Join(ctx); !errors.Is(err, ErrGoexit) {
				return struct{}{}, fmt.Errorf("round %d: Join = %v, want ErrGoexit", round, err)
			}
		}
		// The worker still runs tasks, nested or not.
		h := Spawn(ctx, func(context.Context) (int, error) { return 7, nil })
		if v, err := h.Join(ctx); v != 7 || err != nil {
			return struct{}{}, fmt.Errorf("Join after the Goexits = %d, %v", v, err)
		}
		return struct{}{}, nil
	}
}
